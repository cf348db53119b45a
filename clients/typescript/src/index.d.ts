import type { Client, CallOptions } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ChatService, ChatCompletion, ChatCompletionRequestSchema, ChatMessage } from "../gen/switchyard/v1/chat_pb.js";
import { Model } from "../gen/switchyard/v1/models_pb.js";
import { AdminService } from "../gen/switchyard/admin/v1/admin_pb.js";

export { ChatService } from "../gen/switchyard/v1/chat_pb.js";
export { ModelService } from "../gen/switchyard/v1/models_pb.js";
export { AdminService, BreakerState } from "../gen/switchyard/admin/v1/admin_pb.js";
export { ConnectError, Code } from "@connectrpc/connect";

export type ChatRequest = MessageInitShape<typeof ChatCompletionRequestSchema>;

export interface SwitchyardClient {
  chat(request: ChatRequest, options?: CallOptions): Promise<ChatCompletion>;
  stream(request: ChatRequest, options?: CallOptions): ReturnType<Client<typeof ChatService>["streamChatCompletion"]>;
  models(options?: CallOptions): Promise<Model[]>;
  admin: Client<typeof AdminService>;
}

export function connect(options: { baseUrl: string; key?: string; adminKey?: string }): SwitchyardClient;
export function text(completion: ChatCompletion): string;
export function user(content: string): MessageInitShape<typeof import("../gen/switchyard/v1/chat_pb.js").ChatMessageSchema>;
export function isStreamIncomplete(err: unknown): boolean;
export function isBreakerOpen(err: unknown): boolean;
export function isNotFound(err: unknown): boolean;
export function isUnauthenticated(err: unknown): boolean;
