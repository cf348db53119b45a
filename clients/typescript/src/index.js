// Switchyard's TypeScript/JavaScript client: gRPC to Switchyard's gRPC port from
// Node, over the stubs buf generates into ../gen (see buf.gen.ts.yaml).
import { createClient, ConnectError, Code } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { ChatService } from "../gen/switchyard/v1/chat_pb.js";
import { ModelService } from "../gen/switchyard/v1/models_pb.js";
import { AdminService, BreakerState } from "../gen/switchyard/admin/v1/admin_pb.js";

export { ChatService, ModelService, AdminService, BreakerState, ConnectError, Code };

function bearer(key) {
  return (next) => async (req) => {
    if (key) req.header.set("authorization", `Bearer ${key}`);
    return next(req);
  };
}

/**
 * Connects to Switchyard's gRPC port.
 * @param {{baseUrl: string, key?: string, adminKey?: string}} options
 *   baseUrl like "http://127.0.0.1:9090" (plaintext) or "https://host:9090".
 */
export function connect({ baseUrl, key, adminKey }) {
  const transport = (k) => createGrpcTransport({ baseUrl, interceptors: [bearer(k)] });
  const inference = transport(key);
  const chat = createClient(ChatService, inference);
  const models = createClient(ModelService, inference);
  const admin = createClient(AdminService, transport(adminKey ?? key));
  return {
    /** One complete chat completion. */
    chat: (request, options) => chat.createChatCompletion(request, options),
    /**
     * The completion's chunks. A stream that stops before its final chunk throws
     * (isStreamIncomplete), never ends silently.
     */
    stream: (request, options) => chat.streamChatCompletion(request, options),
    /** The routable models. */
    models: async (options) => (await models.listModels({}, options)).data,
    /** The admin service (needs the admin key). */
    admin,
  };
}

/** The first choice's text of a chat completion. */
export function text(completion) {
  const content = completion.choices[0]?.message?.content;
  return content?.kind?.case === "stringValue" ? content.kind.value : "";
}

/** A user message with text content. */
export function user(content) {
  return { role: "user", content: { kind: { case: "stringValue", value: content } } };
}

function reason(err) {
  const e = ConnectError.from(err);
  for (const d of e.details) {
    if (d.type === "google.rpc.ErrorInfo") {
      // ErrorInfo { reason = 1 } is the first field: read it without its schema.
      // Go writes fields in number order, so a short reason comes first.
      const bytes = d.value;
      if (bytes[0] === 0x0a && bytes[1] < 0x80) return new TextDecoder().decode(bytes.subarray(2, 2 + bytes[1]));
    }
  }
  return "";
}

/** A stream that stopped before its final chunk. */
export const isStreamIncomplete = (err) => reason(err) === "stream_incomplete";
/** A call refused because the target's circuit breaker is open. */
export const isBreakerOpen = (err) => reason(err) === "circuit_breaker_open";
/** An unknown model or admin object. */
export const isNotFound = (err) => ConnectError.from(err).code === Code.NotFound;
/** A missing or wrong key. */
export const isUnauthenticated = (err) => ConnectError.from(err).code === Code.Unauthenticated;
