// The TypeScript client @open-rpc/generator makes from airlock's OpenRPC
// document, as docs/serving.md's steps make it: this file is copied into
// its src/ beside the generated index.ts, built by the same `npx tsc` (the
// package's own tsconfig.json; Node's types come with its dependencies) and
// run against `airlock serve` (target/components): a tool called by position
// (the generated, typed method) and by name (params as an object), and a
// bad argument answered with a typed error — the generated client's own
// check against the document's schema, and airlock's -32602 with
// data.parameter for one only the server can judge.
//
// usage: node build/client-test.js http://127.0.0.1:PORT
import { JSONRPCError } from "@open-rpc/client-js";
import { ParameterValidationError } from "@open-rpc/schema-utils-js";
import AirlockClient from "./index";

async function main(): Promise<number> {
  const url = new URL(process.argv[2]);
  const client = new AirlockClient({
    transport: { type: "http", host: url.hostname, port: Number(url.port), path: "/rpc" },
  });
  let failed = 0;
  const check = async (what: string, run: () => Promise<string | null>) => {
    let problem: string | null;
    try {
      problem = await run();
    } catch (e) {
      problem = `threw ${e instanceof Error ? e.message : JSON.stringify(e)}`;
    }
    console.log(`generated client: ${what}: ${problem === null ? "passed" : `FAILED (${problem})`}`);
    if (problem !== null) failed += 1;
  };

  await check("by position", async () => {
    // Typed: the document says lookup_price answers a number.
    const price: number = await client.lookup_price("SKU-1001");
    return price === 12.5 ? null : `lookup_price answered ${price}`;
  });
  await check("by name", async () => {
    const price = await client.rpc.request({ method: "lookup_price", params: { sku: "SKU-1001" } });
    return price === 12.5 ? null : `lookup_price answered ${JSON.stringify(price)}`;
  });
  await check("defaults by position", async () => {
    const csv: string = await client.export_orders("CUST-42");
    return csv.startsWith("order_id") ? null : `export_orders answered ${JSON.stringify(csv)}`;
  });
  await check("a bad argument, refused by the client from the document's schema", async () => {
    try {
      await (client.lookup_price as unknown as (sku: unknown) => Promise<number>)(42);
    } catch (errors) {
      const all = Array.isArray(errors) ? errors : [errors];
      return all.length > 0 && all.every((e) => e instanceof ParameterValidationError)
        ? null
        : `not a ParameterValidationError: ${JSON.stringify(errors)}`;
    }
    return "no error";
  });
  await check("a bad argument, refused by airlock (-32602, data.parameter)", async () => {
    try {
      await client.rpc.request({
        method: "export_orders",
        params: { customer_id: "CUST-42", max_age_days: "soon" },
      });
    } catch (e) {
      if (!(e instanceof JSONRPCError)) return `not a JSONRPCError: ${String(e)}`;
      const data = e.data as { parameter?: string } | undefined;
      return e.code === -32602 && data?.parameter === "max_age_days"
        ? null
        : `code ${e.code}, data ${JSON.stringify(e.data)}`;
    }
    return "no error";
  });
  return failed;
}

main().then(
  (failed) => process.exit(failed === 0 ? 0 : 1),
  (e) => {
    console.log(`generated client: FAILED (${String(e)})`);
    process.exit(1);
  },
);
