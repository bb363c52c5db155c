// trim.mjs: the LangChain JS peer of agentctx (issue 12). It reads a Claude Code session
// (JSONL), converts it to LangChain messages the way a LangChain user would, and trims it to a
// token budget with trimMessages, counting with gpt-tokenizer (cl100k) through a per-message
// cache.
//
//   node trim.mjs --warm N FILE   fill the cache (untimed), time N trim calls, print the median
//   node trim.mjs --cold FILE     parse + convert + trim once, the cache empty, print the timings
//
// Options: --max-tokens T (default 200000). The output is one line of JSON on stdout.
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";
import { AIMessage, HumanMessage, ToolMessage, trimMessages } from "@langchain/core/messages";
import { countTokens } from "gpt-tokenizer/encoding/cl100k_base";

// The time the modules (LangChain, the tokenizer's tables) took to load, from process start.
const loadMs = performance.now();

function usage(msg) {
  process.stderr.write(`trim.mjs: ${msg}\nusage: node trim.mjs (--warm N | --cold) [--max-tokens T] FILE\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const o = { mode: "", runs: 0, maxTokens: 200000, file: "" };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--cold") o.mode = "cold";
    else if (a === "--warm") {
      o.mode = "warm";
      o.runs = Number(argv[++i]);
      if (!Number.isInteger(o.runs) || o.runs <= 0) usage(`--warm needs a positive count, got ${argv[i]}`);
    } else if (a === "--max-tokens") {
      o.maxTokens = Number(argv[++i]);
      if (!Number.isInteger(o.maxTokens) || o.maxTokens <= 0) usage(`--max-tokens needs a positive count, got ${argv[i]}`);
    } else if (a.startsWith("--")) usage(`unknown flag ${a}`);
    else if (o.file) usage(`one FILE only, got ${o.file} and ${a}`);
    else o.file = a;
  }
  if (!o.mode) usage("want --warm N or --cold");
  if (!o.file) usage("want a session FILE");
  return o;
}

// parse decodes every line of the transcript; a line that is not JSON is reported and skipped.
function parse(file) {
  const records = [];
  const lines = readFileSync(file, "utf8").split("\n");
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] === "") continue;
    try {
      records.push(JSON.parse(lines[i]));
    } catch (err) {
      process.stderr.write(`trim.mjs: ${file}:${i + 1}: skipped: ${err.message}\n`);
    }
  }
  return records;
}

// resultText is a tool_result's content as one string: a string as it is, an array's text
// blocks joined by newlines (other blocks, such as images, dropped).
function resultText(content) {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.filter((b) => b && b.type === "text").map((b) => b.text).join("\n");
}

// convert turns records into LangChain messages:
//   - records other than user and assistant messages are skipped;
//   - consecutive assistant records sharing message.id become one AIMessage holding their text
//     and tool_use blocks, with tool_calls (the tool-result records between them do not break
//     the run, as Claude Code writes a parallel call's results between its blocks);
//   - each tool_result becomes a ToolMessage (status "error" when is_error), placed right after
//     its AIMessage in tool_calls order;
//   - the text a user typed becomes a HumanMessage;
//   - there is no system message.
// Every message gets an id (the record's uuid, or the assistant message id), which the count
// cache is keyed by: trimMessages copies the messages it is given, so their identity is lost.
function convert(records) {
  const results = new Map(); // tool_use_id → ToolMessage
  for (const r of records) {
    if (r.type !== "user" || !r.message || !Array.isArray(r.message.content)) continue;
    for (const b of r.message.content) {
      if (b && b.type === "tool_result") {
        results.set(b.tool_use_id, new ToolMessage({
          id: `${r.uuid}/${b.tool_use_id}`,
          tool_call_id: b.tool_use_id,
          content: resultText(b.content),
          status: b.is_error ? "error" : "success",
        }));
      }
    }
  }
  const out = [];
  let ai = null; // the open assistant message: { id, content, toolCalls }
  const flush = () => {
    if (!ai) return;
    out.push(new AIMessage({ id: ai.id, content: ai.content, tool_calls: ai.toolCalls }));
    for (const tc of ai.toolCalls) {
      const tm = results.get(tc.id);
      if (tm) out.push(tm);
    }
    ai = null;
  };
  for (const r of records) {
    if ((r.type !== "user" && r.type !== "assistant") || !r.message) continue;
    const content = r.message.content;
    if (r.type === "assistant") {
      const id = r.message.id || r.uuid;
      if (!ai || ai.id !== id) {
        flush();
        ai = { id, content: [], toolCalls: [] };
      }
      const blocks = typeof content === "string" ? [{ type: "text", text: content }] : content || [];
      for (const b of blocks) {
        if (b.type === "text") ai.content.push({ type: "text", text: b.text });
        else if (b.type === "tool_use") {
          ai.content.push({ type: "tool_use", id: b.id, name: b.name, input: b.input });
          ai.toolCalls.push({ type: "tool_call", id: b.id, name: b.name, args: b.input ?? {} });
        }
      }
      continue;
    }
    let text;
    if (typeof content === "string") text = content;
    else if (Array.isArray(content)) {
      const texts = content.filter((b) => b && b.type === "text").map((b) => b.text);
      text = texts.length > 0 ? texts.join("\n") : undefined;
    }
    if (text === undefined) continue; // tool results only: placed after their AIMessage
    flush();
    out.push(new HumanMessage({ id: r.uuid, content: text }));
  }
  flush();
  return out;
}

// messageText is what the counter tokenizes for one message: its text, and each tool call's
// name and JSON arguments.
function messageText(m) {
  const c = m.content;
  let s = "";
  if (typeof c === "string") s = c;
  else {
    for (const b of c) {
      if (b.type === "text") s += b.text;
      else if (b.type === "tool_use") s += b.name + JSON.stringify(b.input);
    }
  }
  return s;
}

// perMessage is the framing counted for each message (role and separators), as OpenAI's
// cookbook counts chat messages.
const perMessage = 3;

// newCounter returns trimMessages' token counter with its per-message cache (keyed by message
// id) and the cache itself.
function newCounter() {
  const cache = new Map();
  const count = (m) => {
    let n = cache.get(m.id);
    if (n === undefined) {
      n = countTokens(messageText(m)) + perMessage;
      cache.set(m.id, n);
    }
    return n;
  };
  const counter = (msgs) => {
    let total = 0;
    for (const m of msgs) total += count(m);
    return total;
  };
  return { cache, count, counter };
}

function trim(messages, maxTokens, counter) {
  return trimMessages(messages, { maxTokens, strategy: "last", includeSystem: true, startOn: "human", tokenCounter: counter });
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

const round = (x) => Math.round(x * 1000) / 1000;

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const t0 = performance.now();
  const records = parse(o.file);
  const t1 = performance.now();
  const messages = convert(records);
  const t2 = performance.now();
  const { count, counter } = newCounter();
  const base = { file: o.file, records: records.length, messages: messages.length, max_tokens: o.maxTokens };
  if (o.mode === "cold") {
    const kept = await trim(messages, o.maxTokens, counter);
    const t3 = performance.now();
    const total = messages.reduce((s, m) => s + count(m), 0);
    console.log(JSON.stringify({
      mode: "cold", ...base, tokens: total, kept: kept.length, kept_tokens: counter(kept),
      load_ms: round(loadMs), parse_ms: round(t1 - t0), convert_ms: round(t2 - t1), trim_ms: round(t3 - t2),
      total_ms: round(t3),
    }));
    return;
  }
  // Warm: every message counted before timing, so each timed call only looks counts up.
  const total = messages.reduce((s, m) => s + count(m), 0);
  let kept = await trim(messages, o.maxTokens, counter);
  const runs = [];
  for (let i = 0; i < o.runs; i++) {
    const s = performance.now();
    kept = await trim(messages, o.maxTokens, counter);
    runs.push(performance.now() - s);
  }
  console.log(JSON.stringify({
    mode: "warm", ...base, tokens: total, kept: kept.length, kept_tokens: counter(kept),
    runs: o.runs, median_ms: round(median(runs)), min_ms: round(Math.min(...runs)),
  }));
}

main().catch((err) => {
  process.stderr.write(`trim.mjs: ${err.stack || err}\n`);
  process.exit(1);
});
