// Plain WIT functions in JavaScript (world `plain-js` in wit/plain.wit), as a
// wassette-style component exports them: no airlock SDK. airlock serves each
// function as a tool (`greet`, `split`, `text.stats`, `text.reverse`).
// `cargo xtask build` builds it into target/test-components/plain_js.wasm.

export function greet(name, excited) {
  return `Hello, ${name}${excited ? "!" : "."}`;
}

// An `err` of a `result` is thrown: its value is the error.
export function split(text, separator) {
  if (separator === "") throw "the separator is empty";
  return text.split(separator);
}

// QuickJS exposes an exported interface as an object of functions.
export const text = {
  stats(text) {
    const words = text.split(/\s+/).filter((w) => w !== "").length;
    return { words, chars: Array.from(text).length };
  },
  reverse(text) {
    return Array.from(text).reverse().join("");
  },
};
