// `wordstats`: an example airlock tool written in JavaScript.
//
// Counts the words of a text and lists the most frequent ones; uses one
// parameter of each common kind (string, integer, boolean, array, enum,
// optional) and throws a tool error for an empty text. Build it with
// `cargo xtask build-examples` (it lands in `target/examples/wordstats.wasm`).

import {
  tool,
  server,
  t,
  log,
  ToolError,
  resource,
  resourceTemplate,
  prompt,
  completion,
  message,
  NotFound,
  sample,
  AskError,
} from "../../../sdk/js/airlock-tool.js";

// Words not worth counting, by language: a resource and a template.
const STOPWORDS = { en: ["the", "a", "an", "and", "of"], de: ["der", "die", "das", "und"] };

const wordStats = tool({
  name: "word_stats",
  title: "Word statistics",
  description: "Counts the words of a text and lists the most frequent ones.",
  hints: { readOnly: true, idempotent: true },
  params: {
    text: t.string({
      description: "The text to analyse",
      examples: ["The cat sat on the mat, and the dog sat on the cat."],
    }),
    top: t.integer({ description: "How many of the most frequent words to list", default: 3, minimum: 0 }),
    case_sensitive: t.boolean({ description: "Count `Word` and `word` separately", default: false }),
    ignore: t.array(t.string(), { description: "Words not to count, e.g. the, a", default: [] }),
    order: t.enum(["count", "alphabetical"], { description: "How to order the list", default: "count" }),
    min_length: t.integer({ description: "Only count words at least this long", optional: true }),
  },
  output: t.object({
    words: t.integer(),
    distinct: t.integer(),
    top: t.array(t.object({ word: t.string(), count: t.integer() })),
  }),
  handler({ text, top, case_sensitive, ignore, order, min_length }) {
    if (text.trim() === "") throw new ToolError("the text is empty: there is nothing to count");
    const skip = new Set(ignore.map((w) => (case_sensitive ? w : w.toLowerCase())));
    const counts = new Map();
    let words = 0;
    for (const raw of text.split(/[^\p{L}\p{N}'-]+/u)) {
      if (!raw) continue;
      const word = case_sensitive ? raw : raw.toLowerCase();
      if (skip.has(word) || (min_length != null && word.length < min_length)) continue;
      words += 1;
      counts.set(word, (counts.get(word) ?? 0) + 1);
    }
    const list = [...counts].map(([word, count]) => ({ word, count }));
    list.sort(order === "alphabetical"
      ? (a, b) => (a.word < b.word ? -1 : a.word > b.word ? 1 : 0)
      : (a, b) => b.count - a.count || (a.word < b.word ? -1 : 1));
    log.info(`counted ${words} words`);
    return { words, distinct: counts.size, top: list.slice(0, top) };
  },
});

// Asks the client's model (where the operator grants `ask = ["sample"]`),
// else falls back to the text's first words.
const suggestTitle = tool({
  name: "suggest_title",
  title: "Suggest a title",
  description: "Suggests a title for a text: asks the client's model, or takes its first four words when no model can be asked.",
  hints: { readOnly: true },
  params: { text: t.string({ description: "The text", examples: ["The cat sat on the mat, and the dog sat on the cat."] }) },
  output: t.string(),
  handler({ text }) {
    try {
      const answer = sample({
        messages: `Suggest a short title for this text:\n${text}`,
        systemPrompt: "Answer with the title only.",
        maxTokens: 30,
      });
      return answer.text ?? "";
    } catch (err) {
      if (!(err instanceof AskError)) throw err;
      log.info(`no model asked (${err.kind}): ${err.message}`);
      return text.split(/\s+/).slice(0, 4).join(" ");
    }
  },
});

const stopwords = resource({
  uri: "wordstats://stopwords",
  name: "stopwords",
  title: "Stop words",
  description: "Words not worth counting, by language (pass them as `ignore`).",
  mimeType: "application/json",
  read: () => JSON.stringify(STOPWORDS),
});

const languageStopwords = resourceTemplate({
  uriTemplate: "wordstats://stopwords/{lang}",
  name: "language-stopwords",
  description: "The stop words of one language, one a line.",
  mimeType: "text/plain",
  read: ({ lang }) => {
    if (!(lang in STOPWORDS)) throw new NotFound(`no stop words for ${lang}; there are: ${Object.keys(STOPWORDS).join(", ")}`);
    return STOPWORDS[lang].join("\n");
  },
});

const summarize = prompt({
  name: "summarize_text",
  title: "Summarize a text",
  description: "Asks for a summary of a text, with its most frequent words.",
  arguments: {
    text: { description: "The text to summarize" },
    lang: { description: "Its language (en or de)", required: false },
  },
  get: ({ text, lang }) => [
    message.user(`Summarize this text${lang ? ` (language: ${lang})` : ""}:`),
    message.user(text),
    message.user("Call word_stats on it first and mention its three most frequent words."),
  ],
});

const languages = completion({
  prompt: summarize,
  argument: "lang",
  complete: (value) => Object.keys(STOPWORDS).filter((l) => l.startsWith(value)),
});

// The exports of the world `server`.
export const { tools, resources, prompts, completions, skills } = server(
  wordStats,
  suggestTitle,
  stopwords,
  languageStopwords,
  summarize,
  languages,
);
