// Stream resume with the official Node OpenAI SDK. Started by TestNodeSDKResume
// (e2e/resume_test.go): virtual model "resumed" chains a primary that cuts each
// stream after "one two " to a backup that continues with "three four".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';

const client = new OpenAI({
  baseURL: process.env.SWITCHYARD_BASE_URL,
  apiKey: 'unused',
  maxRetries: 0,
});
const messages = [{ role: 'user', content: 'hi' }];

test('the stream helper accumulates one answer', async () => {
  const stream = client.chat.completions.stream({
    model: 'resumed', messages, stream_options: { include_usage: true },
  });
  let text = '';
  stream.on('content', (delta) => { text += delta; });
  const final = await stream.finalChatCompletion();
  assert.equal(text, 'one two three four');
  assert.equal(final.id, 'chatcmpl-fake2');
  assert.equal(final.choices.length, 1);
  assert.equal(final.choices[0].message.role, 'assistant');
  assert.equal(final.choices[0].message.content, 'one two three four');
  assert.equal(final.choices[0].finish_reason, 'stop');
  assert.equal(final.usage.total_tokens, 21);
});

test('raw iteration: one id, one finish, the resume named on the first spliced chunk', async () => {
  const stream = await client.chat.completions.create({ model: 'resumed', messages, stream: true });
  const ids = new Set();
  const marks = [];
  let text = '';
  let finishes = 0;
  for await (const chunk of stream) {
    ids.add(chunk.id);
    if (chunk.switchyard) marks.push(chunk.switchyard);
    for (const c of chunk.choices) {
      text += c.delta?.content ?? '';
      if (c.finish_reason) finishes++;
    }
  }
  assert.deepEqual([...ids], ['chatcmpl-fake2']);
  assert.equal(text, 'one two three four');
  assert.equal(finishes, 1);
  assert.deepEqual(marks, [{ resumed_from: 'up/gpt-4o', resumed_to: 'backup/gpt-4o-mini' }]);
});
