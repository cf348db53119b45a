// The official Node Anthropic SDK (@anthropic-ai/sdk) against Switchyard's
// /v1/messages surface, with targets that speak OpenAI's wire. Started by
// e2e/messages_node_test.go, which runs Switchyard and the fake upstreams and
// passes SWITCHYARD_ROOT (no /v1: the SDK adds it) / SWITCHYARD_KEY.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';

const baseURL = process.env.SWITCHYARD_ROOT;
const client = new Anthropic({ baseURL, apiKey: process.env.SWITCHYARD_KEY, maxRetries: 0 });
const messages = [{ role: 'user', content: 'hi' }];

test('messages.create, x-api-key', async () => {
  const m = await client.messages.create({ model: 'up/gpt-4o', max_tokens: 64, messages });
  assert.equal(m.type, 'message');
  assert.equal(m.role, 'assistant');
  assert.equal(m.content[0].type, 'text');
  assert.equal(m.content[0].text, 'Hello from the fake upstream!');
  assert.equal(m.stop_reason, 'end_turn');
  assert.equal(m.usage.input_tokens, 17);
  assert.equal(m.usage.output_tokens, 4);
  assert.match(m.id, /^msg_/);
  assert.ok(m._request_id, 'request-id header read by the SDK');
});

test('messages.create, Authorization: Bearer (authToken)', async () => {
  const bearer = new Anthropic({ baseURL, apiKey: null, authToken: process.env.SWITCHYARD_KEY, maxRetries: 0 });
  const m = await bearer.messages.create({ model: 'up/gpt-4o', max_tokens: 64, messages });
  assert.equal(m.content[0].text, 'Hello from the fake upstream!');
});

test('messages.stream helper: text events and the final message', async () => {
  const stream = client.messages.stream({ model: 'up/gpt-4o', max_tokens: 64, messages });
  let text = '';
  stream.on('text', (delta) => { text += delta; });
  const final = await stream.finalMessage();
  assert.equal(text, 'Hello from the fake upstream!');
  assert.equal(final.content[0].text, 'Hello from the fake upstream!');
  assert.equal(final.stop_reason, 'end_turn');
  assert.equal(final.usage.input_tokens, 17);
  assert.equal(final.usage.output_tokens, 4);
});

test('raw stream iteration ends with message_stop', async () => {
  const stream = await client.messages.create({ model: 'up/gpt-4o', max_tokens: 64, messages, stream: true });
  const types = [];
  for await (const ev of stream) types.push(ev.type);
  assert.equal(types[0], 'message_start');
  assert.equal(types.at(-1), 'message_stop');
  assert.ok(types.includes('content_block_delta'));
});

test('tool use', async () => {
  const m = await client.messages.create({
    model: 'tools/gpt-4o', max_tokens: 64, messages: [{ role: 'user', content: 'Weather in Paris?' }],
    tools: [{ name: 'get_weather', description: 'Current weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
    tool_choice: { type: 'tool', name: 'get_weather' },
  });
  assert.equal(m.stop_reason, 'tool_use');
  const use = m.content.find((b) => b.type === 'tool_use');
  assert.equal(use.name, 'get_weather');
  assert.deepEqual(use.input, { city: 'Paris' });
  const next = await client.messages.create({
    model: 'tools/gpt-4o', max_tokens: 64,
    messages: [{ role: 'user', content: 'Weather in Paris?' }, { role: 'assistant', content: m.content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: '18 degrees' }] }],
  });
  assert.equal(next.type, 'message');
});

test('thinking', async () => {
  const m = await client.messages.create({
    model: 'think/gpt-4o', max_tokens: 8000, thinking: { type: 'enabled', budget_tokens: 2048 }, messages,
  });
  assert.equal(m.content[0].type, 'thinking');
  assert.equal(m.content[0].thinking, '12 - 5 is 7.');
  assert.equal(m.content[1].text, 'x = 7');
});

test('errors are SDK-native', async () => {
  await assert.rejects(client.messages.create({ model: 'no-such-model', max_tokens: 5, messages }), (e) => {
    assert.ok(e instanceof Anthropic.NotFoundError, e.constructor.name);
    assert.equal(e.status, 404);
    assert.equal(e.error.type, 'error');
    assert.equal(e.error.error.type, 'not_found_error');
    return true;
  });
  const wrong = new Anthropic({ baseURL, apiKey: 'sk-wrong', maxRetries: 0 });
  await assert.rejects(wrong.messages.create({ model: 'up/gpt-4o', max_tokens: 5, messages }), (e) => {
    assert.ok(e instanceof Anthropic.AuthenticationError, e.constructor.name);
    assert.equal(e.error.error.type, 'authentication_error');
    return true;
  });
  await assert.rejects(client.messages.create({ model: 'up/gpt-4o', messages }), (e) => {
    assert.ok(e instanceof Anthropic.BadRequestError, e.constructor.name);
    assert.equal(e.error.error.type, 'invalid_request_error');
    assert.match(e.message, /max_tokens: Field required/);
    return true;
  });
});

test('a stream cut short rejects, never ends as a whole message', async () => {
  const stream = client.messages.stream({ model: 'cut/gpt-4o', max_tokens: 64, messages });
  let text = '';
  stream.on('text', (delta) => { text += delta; });
  await assert.rejects(stream.finalMessage(), (e) => {
    assert.ok(e instanceof Anthropic.APIError, e.constructor.name);
    assert.match(e.message, /ended before its final event/);
    return true;
  });
  assert.equal(text, 'Hello from ');
});

test('native Anthropic target: the upstream answer as it came, cache_control kept', async () => {
  const m = await client.messages.create({
    model: 'anth/claude-sonnet-4-20250514', max_tokens: 64,
    system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }], messages,
  });
  assert.equal(m.id, 'msg_fake01');
  assert.equal(m.content[0].text, 'Hello from the fake upstream!');
  const stream = client.messages.stream({ model: 'anth/claude-sonnet-4-20250514', max_tokens: 64, messages });
  const final = await stream.finalMessage();
  assert.equal(final.content[0].text, 'Hello from the fake upstream!');
  assert.equal(final.stop_reason, 'end_turn');
});

test('a Claude target overloaded fails over to a GPT target, answering as a message', async () => {
  const { data, response } = await client.messages.create({ model: 'claude-first', max_tokens: 64, messages }).withResponse();
  assert.equal(response.headers.get('x-switchyard-target'), 'up/gpt-4o');
  assert.equal(data.content[0].text, 'Hello from the fake upstream!');
  const stream = client.messages.stream({ model: 'claude-first', max_tokens: 64, messages });
  const final = await stream.finalMessage();
  assert.equal(final.content[0].text, 'Hello from the fake upstream!');
});

test('count_tokens reaches the Anthropic target', async () => {
  const n = await client.messages.countTokens({ model: 'anth/claude-sonnet-4-20250514', messages });
  assert.equal(n.input_tokens, 14);
});
