// Type-checked by `tsc -p clients/typescript` in the test command: the client's
// declarations must describe what a TypeScript caller writes.
import { connect, text, user, isBreakerOpen, BreakerState } from "../src/index.js";

export async function example(): Promise<string> {
  const client = connect({ baseUrl: "http://localhost:9090", key: "k" });
  const resp = await client.chat({ model: "sim-1", messages: [user("hi")], temperature: 0.2 });
  let out = text(resp);
  for await (const chunk of client.stream({ model: "sim-1", messages: [user("hi")] })) {
    out += chunk.choices[0]?.delta?.content ?? "";
  }
  const { breakers } = await client.admin.listBreakers({});
  const open = breakers.filter((b) => b.state === BreakerState.OPEN).length;
  const models = await client.models();
  return `${out} ${open} ${models.length} ${isBreakerOpen(new Error("x"))}`;
}
