// The official Node OpenAI SDK against Switchyard's REST surface. Started by
// e2e/node_test.go, which runs Switchyard and the fake upstreams and passes
// SWITCHYARD_BASE_URL / SWITCHYARD_KEY.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({
  baseURL: process.env.SWITCHYARD_BASE_URL,
  apiKey: process.env.SWITCHYARD_KEY,
  maxRetries: 0,
});
const messages = [{ role: 'user', content: 'hi' }];

test('chat completion', async () => {
  const r = await client.chat.completions.create({ model: 'up/gpt-4o', messages });
  assert.equal(r.choices[0].message.content, 'Hello from the fake upstream!');
  assert.equal(r.choices[0].index, 0);
  assert.equal(typeof r.created, 'number');
  assert.equal(r.usage.total_tokens, 21);
});

test('streaming with include_usage through the stream helper', async () => {
  const stream = client.chat.completions.stream({
    model: 'up/gpt-4o', messages, stream_options: { include_usage: true },
  });
  let text = '';
  stream.on('content', (delta) => { text += delta; });
  const final = await stream.finalChatCompletion();
  assert.equal(text, 'Hello from the fake upstream!');
  assert.equal(final.choices[0].message.content, 'Hello from the fake upstream!');
  assert.equal(final.choices[0].finish_reason, 'stop');
  assert.equal(final.usage.total_tokens, 21);
});

test('raw stream iteration', async () => {
  const stream = await client.chat.completions.create({ model: 'up/gpt-4o', messages, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, 'Hello from the fake upstream!');
});

test('a stream cut short surfaces as an error', async () => {
  const stream = await client.chat.completions.create({ model: 'cut/gpt-4o', messages, stream: true });
  let text = '';
  await assert.rejects(async () => {
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  }, /stream_incomplete|ended before its final event/);
  assert.equal(text, 'Hello from ');
});

test('models.list', async () => {
  const ids = [];
  for await (const m of client.models.list()) ids.push(m.id);
  assert.ok(ids.includes('up/gpt-4o'), ids.join(','));
});

test('errors are SDK-native', async () => {
  await assert.rejects(client.chat.completions.create({ model: 'no-such-model', messages }), (e) => {
    assert.ok(e instanceof OpenAI.NotFoundError, e.constructor.name);
    assert.equal(e.status, 404);
    assert.equal(e.code, 'model_not_found');
    assert.equal(e.param, 'model');
    return true;
  });
  await assert.rejects(client.chat.completions.create({ model: 'fail/gpt-4o', messages }), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError, e.constructor.name);
    assert.equal(e.status, 400);
    assert.equal(e.code, 'context_length_exceeded');
    assert.match(e.message, /maximum context length/);
    return true;
  });
  await assert.rejects(client.chat.completions.create({ model: 'up/gpt-4o', messages, temperature: 'hot' }), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError);
    assert.equal(e.param, 'temperature');
    return true;
  });
  const bad = new OpenAI({ baseURL: process.env.SWITCHYARD_BASE_URL, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(bad.chat.completions.create({ model: 'up/gpt-4o', messages }), OpenAI.AuthenticationError);
});

test('unknown parameters reach the upstream', async () => {
  const r = await client.chat.completions.create({ model: 'up/gpt-4o', messages, top_k: 40 });
  assert.equal(r.choices[0].message.content, 'Hello from the fake upstream!');
});
