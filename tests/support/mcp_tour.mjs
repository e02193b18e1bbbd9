// A tour of what an MCP server offers, taken by the MCP TypeScript SDK's own client
// (@modelcontextprotocol/sdk, installed by scripts/install-test-servers.sh), so a test can
// compare a server reached directly with the same server through `cosmos proxy`: the Python
// tour's counterpart (tests/support/mcp_tour.py), without its timed subscription.
//
//     node mcp_tour.mjs SPEC_JSON
//
// SPEC is {"sdk": DIR (the SDK's package folder), "transport": "stdio", "command", "args",
// "env"} or {..., "transport": "http", "url"}, "long_calls", and "logs_expected" (how many log
// messages to wait for after the call that starts logging). The client declares sampling
// (it answers "sampled: " and the request's text), roots (one, file:///tour) and elicitation
// (it declines), and keeps each log message. It prints one JSON object: capabilities, instructions, tools, prompts, a prompt
// got, a resource read, a completion, a sampling tool's result, the roots the server saw, the
// log messages sent during a call before its result, and each long call's progress, in order.

import { pathToFileURL } from "node:url";
import { join } from "node:path";

const spec = JSON.parse(process.argv[2]);
const sdk = (path) => import(pathToFileURL(join(spec.sdk, "dist/esm", path)).href);
const { Client } = await sdk("client/index.js");
const types = await sdk("types.js");

const RESOURCE = "demo://resource/static/document/architecture.md";
const client = new Client(
  { name: "ts-tour-client", version: "1.0.0" },
  { capabilities: { sampling: {}, roots: { listChanged: true }, elicitation: { form: {}, url: {} } } },
);
const logs = [];
client.setRequestHandler(types.CreateMessageRequestSchema, async (request) => ({
  role: "assistant",
  content: {
    type: "text",
    text:
      "sampled: " +
      request.params.messages
        .filter((m) => m.content.type === "text")
        .map((m) => m.content.text)
        .join(" "),
  },
  model: "tour-model",
  stopReason: "endTurn",
}));
client.setRequestHandler(types.ListRootsRequestSchema, async () => ({
  roots: [{ uri: "file:///tour", name: "tour" }],
}));
client.setRequestHandler(types.ElicitRequestSchema, async () => ({ action: "decline" }));
client.setNotificationHandler(types.LoggingMessageNotificationSchema, (n) => {
  logs.push({ level: n.params.level, data: n.params.data });
});

let transport;
if (spec.transport === "http") {
  const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
  transport = new StreamableHTTPClientTransport(new URL(spec.url));
} else {
  const { StdioClientTransport } = await sdk("client/stdio.js");
  transport = new StdioClientTransport({
    command: spec.command,
    args: spec.args ?? [],
    env: spec.env,
    stderr: "inherit",
  });
}
await client.connect(transport);

const texts = (result) => result.content.filter((c) => c.type === "text").map((c) => c.text);
const out = {
  capabilities: client.getServerCapabilities(),
  instructions: client.getInstructions() ?? null,
};
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
out.prompts = (await client.listPrompts()).prompts.map((p) => p.name).sort();
out.prompt = await client.getPrompt({
  name: "args-prompt",
  arguments: { city: "Lyon", state: "Rhone" },
});
out.read = await client.readResource({ uri: RESOURCE });
out.completion = (
  await client.complete({
    ref: { type: "ref/prompt", name: "completable-prompt" },
    argument: { name: "department", value: "E" },
  })
).completion.values;
out.sampled = texts(
  await client.callTool({
    name: "trigger-sampling-request",
    arguments: { prompt: "hello", maxTokens: 5 },
  }),
);
out.roots = texts(await client.callTool({ name: "get-roots-list", arguments: {} }));
await client.setLoggingLevel("debug");
// Logging starts with one message sent during the call, before its result.
await client.callTool({ name: "toggle-simulated-logging", arguments: {} });
out.logs_before_result = logs.length;
// Over HTTP a log message comes on the session's own stream, maybe after the call's result:
// wait (5 s at most) for as many as the test expects.
const until = Date.now() + 5000;
while (logs.length < (spec.logs_expected ?? 0) && Date.now() < until) {
  await new Promise((resolve) => setTimeout(resolve, 10));
}
out.logs_soon_after = logs.length;
await client.callTool({ name: "toggle-simulated-logging", arguments: {} });
out.progress = [];
for (let i = 0; i < (spec.long_calls ?? 0); i++) {
  const seen = [];
  await client.callTool(
    { name: "trigger-long-running-operation", arguments: { duration: 0.2, steps: 5 } },
    undefined,
    { onprogress: (p) => seen.push(p.progress) },
  );
  out.progress.push(seen);
}
await client.close();
console.log(JSON.stringify(out));
