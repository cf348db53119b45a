// The official Node OpenAI SDK's embeddings against Switchyard's REST surface.
// Started by TestEmbeddingsNodeSDK (e2e/embeddings_test.go), which runs
// Switchyard with the fake embeddings upstream "emb" and passes
// SWITCHYARD_BASE_URL / SWITCHYARD_KEY.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({
  baseURL: process.env.SWITCHYARD_BASE_URL,
  apiKey: process.env.SWITCHYARD_KEY,
  maxRetries: 0,
});
const model = 'emb/text-embedding-3-small';
// The fake upstream's vector for input i (fakeupstream.EmbeddingVector).
const vector = (i) => [i + 0.5, -0.25, 0.125];

test('embeddings.create: the SDK asks for base64 and decodes what Switchyard relays', async () => {
  const r = await client.embeddings.create({ model, input: ['hello', 'world'] });
  assert.equal(r.object, 'list');
  assert.equal(r.data.length, 2);
  assert.deepEqual(r.data[0].embedding, vector(0));
  assert.deepEqual(r.data[1].embedding, vector(1));
  assert.equal(r.usage.prompt_tokens, 8);
  assert.equal(r.model, 'text-embedding-3-small');
});

test('embeddings.create with encoding_format float', async () => {
  const r = await client.embeddings.create({ model, input: 'hello', encoding_format: 'float' });
  assert.deepEqual(r.data[0].embedding, vector(0));
});

test('embeddings.create with encoding_format base64 returns the string', async () => {
  const r = await client.embeddings.create({ model, input: [[1, 2], [3]], encoding_format: 'base64' });
  assert.equal(r.data.length, 2);
  assert.equal(typeof r.data[1].embedding, 'string');
  const floats = new Float32Array(new Uint8Array(Buffer.from(r.data[1].embedding, 'base64')).buffer);
  assert.deepEqual(Array.from(floats), vector(1));
});

test('an unknown model is the SDK\'s NotFoundError', async () => {
  await assert.rejects(client.embeddings.create({ model: 'nope', input: 'x' }), (e) => e instanceof OpenAI.NotFoundError);
});
