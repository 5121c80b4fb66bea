// A module loader hook (node:module register) that reports every module of a document parser
// (mupdf, mammoth, sharp, exceljs) the registering thread resolves, on the port it is given.
// Hooks registered with register() apply to the thread that registers them, not to worker
// threads, so what comes back is what the event loop itself loaded.
const PARSERS = /\/node_modules\/(mupdf|mammoth|sharp|exceljs)\//;
let port;

export function initialize(data) {
  port = data.port;
}

export async function resolve(specifier, context, next) {
  const out = await next(specifier, context);
  if (PARSERS.test(out.url)) port.postMessage(out.url);
  return out;
}
