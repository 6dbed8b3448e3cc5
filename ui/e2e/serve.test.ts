// The suite serves the built UI: index.html revalidates, hashed assets are
// cached for good with the right types, app routes get the app, and
// Chromium loads it without an error.
import { describe, expect, test } from "vitest";

import { newPage, suites, useBrowser } from "./helpers.js";

const browser = useBrowser();

describe.each(suites)("on the $backend backend", ({ url }) => {
  test("index.html and app routes: HTML that revalidates", async () => {
    // App routes must not start with an API prefix (/agents, /threads, /runs, /v1).
    for (const route of ["/", "/chat/hello/t1"]) {
      const res = await fetch(url + route);
      expect(res.status, route).toBe(200);
      expect(res.headers.get("content-type"), route).toBe("text/html; charset=utf-8");
      expect(res.headers.get("cache-control"), route).toBe("no-cache");
      expect(await res.text(), route).toContain('<div id="root">');
    }
  });

  test("the assets index.html loads: immutable, typed", async () => {
    const html = await (await fetch(url + "/")).text();
    const refs = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(refs.some((r) => r.endsWith(".js"))).toBe(true);
    for (const ref of refs) {
      const res = await fetch(url + ref);
      expect(res.status, ref).toBe(200);
      expect(res.headers.get("cache-control"), ref).toBe("public, max-age=31536000, immutable");
      const type = ref.endsWith(".js") ? "text/javascript; charset=utf-8" : ref.endsWith(".css") ? "text/css; charset=utf-8" : undefined;
      if (type) expect(res.headers.get("content-type"), ref).toBe(type);
    }
    expect((await fetch(url + "/assets/missing-0000.js")).status).toBe(404);
  });

  test("Chromium renders the app into #root without errors", async () => {
    const { context, page, errors } = await newPage(browser());
    try {
      const res = await page.goto(url + "/");
      expect(res?.status()).toBe(200);
      await expect.poll(() => page.locator("#root > *").count()).toBeGreaterThan(0);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
