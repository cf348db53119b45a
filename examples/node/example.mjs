// Calls Switchyard over gRPC with the TypeScript/JavaScript client: a chat, a
// stream, and the circuit breakers.
//   node examples/node/example.mjs [http://localhost:9090] [simulator/sim-1]
import { connect, text, user, BreakerState } from "../../clients/typescript/src/index.js";

const baseUrl = process.argv[2] ?? "http://localhost:9090";
const model = process.argv[3] ?? "simulator/sim-1";
const client = connect({ baseUrl, key: process.env.SWITCHYARD_MASTER_KEY, adminKey: process.env.SWITCHYARD_ADMIN_KEY });
const request = { model, messages: [user("Say hello.")] };

console.log("chat:", text(await client.chat(request)));
let out = "";
for await (const chunk of client.stream(request)) out += chunk.choices[0]?.delta?.content ?? "";
console.log("stream:", out);
for (const b of (await client.admin.listBreakers({})).breakers) console.log("breaker:", b.provider, b.model, BreakerState[b.state]);
