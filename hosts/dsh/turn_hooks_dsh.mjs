// turn-hooks for DSH (DeepSeek Harness): a Cordis plugin, shipped inside the Python
// package, that runs the turn-hooks plugins through the turn-hooks command.
//
// - agent/pre-step, first step of a turn only: runs `host dsh pre-turn` with a
//   Codex-shaped event and appends at most one message whose source is
//   {kind: "plugin", plugin: "turn-hooks"} after next(), never into the system prompt.
// - session/event turn/end with reason.kind "completed": runs `host dsh
//   post-settlement` with the turn's final assistant text, detached, so the Turn is
//   never held up and a one-shot host may exit while settlement finishes.
//
// It imports Node built-ins only, so it loads from any path. Every failure lets the
// Turn proceed unchanged: the hook fails open.
import { spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";

export const name = "turn-hooks";

const SOURCE = Object.freeze({ kind: "plugin", plugin: "turn-hooks" });
const DEFAULT_TIMEOUT_MS = 30000;
// Far more than any rendered context (bounded to 8,000 characters); a runaway
// child cannot grow our memory.
const MAX_STDOUT_CHARS = 1024 * 1024;

function textOf(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((block) => block && block.type === "text" && typeof block.text === "string")
    .map((block) => block.text)
    .join("");
}

function hookArgv(config, event) {
  const argv = [...config.command, "host", "dsh", event, "--goal-id", config.goalId, "--agent-id", config.agentId];
  if (config.registry) argv.push("--registry", config.registry);
  if (config.noPromptInRecall) argv.push("--no-prompt-in-recall");
  if (event === "post-settlement" && Array.isArray(config.validationCommand)) {
    argv.push("--validation-command-json", JSON.stringify(config.validationCommand));
  }
  return argv;
}

function configured(config) {
  return (
    config &&
    Array.isArray(config.command) &&
    config.command.length > 0 &&
    config.command.every((part) => typeof part === "string") &&
    typeof config.goalId === "string" &&
    typeof config.agentId === "string"
  );
}

// Runs the pre-turn hook; resolves to the rendered context, or "" on any failure.
function runPreTurn(config, event, signal) {
  return new Promise((resolve) => {
    let settled = false;
    let stdout = "";
    const finish = (text) => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        resolve(text);
      }
    };
    const [file, ...args] = hookArgv(config, "pre-turn");
    let child;
    try {
      child = spawn(file, args, { stdio: ["pipe", "pipe", "ignore"], signal });
    } catch {
      return resolve("");
    }
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      finish("");
    }, config.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    child.on("error", () => finish(""));
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      if (stdout.length > MAX_STDOUT_CHARS) {
        child.kill("SIGKILL");
        finish("");
      }
    });
    child.on("close", () => {
      try {
        const output = JSON.parse(stdout.trim() || "{}");
        const text = output?.hookSpecificOutput?.additionalContext;
        finish(typeof text === "string" ? text : "");
      } catch {
        finish("");
      }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(event));
  });
}

// Starts the settlement hook in its own session and returns at once. The event goes
// through an unlinked 0600 file rather than a pipe, so nothing is lost if the host
// exits before a pipe would have drained.
function startSettlement(config, event) {
  let directory;
  try {
    directory = mkdtempSync(join(tmpdir(), "turn-hooks-dsh-"));
    const path = join(directory, "event.json");
    writeFileSync(path, JSON.stringify(event), { mode: 0o600 });
    const fd = openSync(path, "r");
    try {
      const [file, ...args] = hookArgv(config, "post-settlement");
      const child = spawn(file, args, { stdio: [fd, "ignore", "ignore"], detached: true });
      child.on("error", () => {});
      child.unref();
    } finally {
      closeSync(fd);
    }
  } catch {
    // fail open: the Turn has already completed
  } finally {
    if (directory) rmSync(directory, { recursive: true, force: true });
  }
}

function pluginMessage(text) {
  return Object.freeze({
    id: randomUUID(),
    role: "user",
    content: Object.freeze([Object.freeze({ type: "text", text })]),
    source: SOURCE,
  });
}

export function apply(ctx, config) {
  if (!configured(config)) {
    ctx.logger?.warn?.("turn-hooks: config needs command, goalId and agentId; hooks are off");
    return;
  }
  // Which hooks run: both unless the config names a subset (["pre-turn"], ...).
  const events = new Set(Array.isArray(config.events) ? config.events : ["pre-turn", "post-settlement"]);
  const lastTurnSeen = new Map(); // agent id -> the last turn whose first step we saw
  const finalText = new Map(); // session id -> the turn's latest assistant text

  ctx.on("agent/pre-step", async (payload, next) => {
    const { agent, messages, turn, signal } = payload;
    const decision = await next();
    if (!events.has("pre-turn")) return decision;
    if (lastTurnSeen.get(agent.id) === turn) return decision;
    lastTurnSeen.set(agent.id, turn);
    if (!decision || decision.kind !== "enter") return decision;
    const prompt = messages
      .filter((message) => message?.source?.kind === "user")
      .map((message) => textOf(message.content))
      .join("\n");
    const event = {
      hook_event_name: "UserPromptSubmit",
      session_id: agent.id,
      turn_id: `${agent.id}:${turn}`,
      cwd: agent.session?.header?.cwd ?? process.cwd(),
      prompt,
    };
    const text = await runPreTurn(config, event, signal);
    if (!text) return decision;
    return { kind: "enter", messages: [...decision.messages, pluginMessage(text)] };
  });

  ctx.on("session/event", (session, event) => {
    const id = session?.header?.id;
    if (!id || !event) return;
    if (event.type === "turn/start") finalText.delete(id);
    if (event.type === "assistant/message") {
      const text = textOf(event.data?.message?.content);
      if (text) finalText.set(id, text);
    }
    if (event.type !== "turn/end") return;
    const text = finalText.get(id);
    finalText.delete(id);
    if (event.data?.reason?.kind !== "completed" || !events.has("post-settlement")) return;
    startSettlement(config, {
      hook_event_name: "Stop",
      session_id: id,
      turn_id: `${id}:${event.data.turn}`,
      cwd: session.header.cwd ?? process.cwd(),
      last_assistant_message: text ?? null,
    });
  });
}
