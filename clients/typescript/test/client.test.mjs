// Started by clients/go's sibling test in e2e (node_client_test.go) with a running
// Switchyard: SWITCHYARD_GRPC_URL, SWITCHYARD_KEY, SWITCHYARD_ADMIN_KEY.
import { test } from "node:test";
import assert from "node:assert/strict";
import { connect, text, user, isStreamIncomplete, isNotFound, isUnauthenticated } from "../src/index.js";

const baseUrl = process.env.SWITCHYARD_GRPC_URL;
const client = connect({ baseUrl, key: process.env.SWITCHYARD_KEY, adminKey: process.env.SWITCHYARD_ADMIN_KEY });
const request = { model: "up/gpt-4o", messages: [user("hi")] };

test("unary chat", async () => {
  const resp = await client.chat(request);
  assert.equal(text(resp), "Hello from the fake upstream!");
  assert.equal(resp.usage.totalTokens, 21);
});

test("streaming chat", async () => {
  let out = "";
  for await (const chunk of client.stream(request)) out += chunk.choices[0]?.delta?.content ?? "";
  assert.equal(out, "Hello from the fake upstream!");
});

test("a truncated stream throws", async () => {
  let out = "";
  await assert.rejects(async () => {
    for await (const chunk of client.stream({ ...request, model: "cut/gpt-4o" })) out += chunk.choices[0]?.delta?.content ?? "";
  }, (err) => isStreamIncomplete(err));
  assert.equal(out, "Hello from ");
});

test("models and errors", async () => {
  const models = await client.models();
  assert.ok(models.some((m) => m.id === "up/gpt-4o"));
  await assert.rejects(client.chat({ ...request, model: "nope" }), (err) => isNotFound(err));
  const anon = connect({ baseUrl });
  await assert.rejects(anon.chat(request), (err) => isUnauthenticated(err));
});

test("admin: list breakers", async () => {
  const resp = await client.admin.listBreakers({});
  assert.ok(resp.breakers.some((b) => b.provider === "up"));
});
