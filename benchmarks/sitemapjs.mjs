// sitemap.js on the rows of benchmarks/common.py (make_rows), for benchmarks/extensions.py:
//   node sitemapjs.mjs ITEMS ROUNDS IMAGES   (NODE_PATH: a node_modules holding `sitemap`)
// Prints {"links": [[seconds, ...], bytes], "images": [[seconds, ...], bytes]} as JSON.
import { createRequire } from "node:module";
import path from "node:path";
import { performance } from "node:perf_hooks";

const require = createRequire(path.join(process.env.NODE_PATH, "noop.js"));
const { SitemapStream, streamToPromise } = require("sitemap");

const [items, rounds, images] = process.argv.slice(2).map(Number);
const LANGUAGES = ["en", "de", "fr"];
const EPOCH = Date.UTC(2025, 0, 1);
const CHANGEFREQS = ["daily", "weekly"];
const PRIORITIES = [0.5, 0.8, 1.0];

function row(n) {
  const path = n % 100 === 0 ? `/p/caf\u00e9-cr\u00e8me-${n}?colour=red&size=${n % 7}` : `/p/item-${n}?colour=red&size=${n % 7}`;
  const lastmod = new Date(EPOCH + 37 * n * 1000).toISOString();
  return { path, lastmod, changefreq: CHANGEFREQS[n % 2], priority: PRIORITIES[n % 3] };
}

const rows = Array.from({ length: items * LANGUAGES.length }, (_, n) => row(n));

function* links() {
  for (const { path, lastmod, changefreq, priority } of rows.slice(0, items)) {
    const group = LANGUAGES.map((lang) => ({ lang, url: `/${lang}${path}` }));
    group.push({ lang: "x-default", url: `/en${path}` });
    for (const lang of LANGUAGES) {
      yield { url: `/${lang}${path}`, lastmod, changefreq, priority, links: group };
    }
  }
}

function* withImages() {
  for (const { path, lastmod, changefreq, priority } of rows) {
    const slug = path.split("?")[0].split("/").pop();
    const img = Array.from({ length: images }, (_, n) => ({ url: `https://cdn.example.net/img/${slug}/${n}.jpg` }));
    yield { url: path, lastmod, changefreq, priority, img };
  }
}

async function render(entries) {
  const stream = new SitemapStream({ hostname: "https://shop.example" });
  for (const entry of entries()) stream.write(entry);
  stream.end();
  return streamToPromise(stream);
}

const out = {};
for (const [mode, entries] of [["links", links], ["images", withImages]]) {
  const times = [];
  let size = 0;
  await render(entries); // warm-up
  for (let r = 0; r < rounds; r++) {
    const start = performance.now();
    const body = await render(entries);
    times.push((performance.now() - start) / 1000);
    size = body.length;
  }
  out[mode] = [times, size];
}
process.stdout.write(JSON.stringify(out));
