// airlock-types.js — what airlock-tool.js and airlock-server.js share, as
// the contract's `types` interface has it: the errors a handler throws, how
// an error reaches the client, icons, and the rule for names. Both import
// it and it imports neither, so the helpers' modules form a one-way graph.
// Tools import these names from airlock-tool.js, which re-exports them.

/** A tool's, prompt's or argument's name: 1–64 of `A-Z a-z 0-9 _ - .`. */
export const NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** Thrown by a handler to fail the call; the message reaches the client. */
export class ToolError extends Error {}

/** Thrown when the arguments do not fit (a check the schema cannot express). */
export class InvalidArguments extends ToolError {}

/** The text a thrown value reaches the client as (a bug is named by its class). */
export function errorText(err) {
  if (err instanceof ToolError) return err.message;
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}

/** The contract's icons from `[{ src, mimeType, sizes }]`. */
export function icons(list) {
  return (list ?? []).map((i) => ({ src: i.src, mimeType: i.mimeType ?? null, sizes: i.sizes ?? [] }));
}
