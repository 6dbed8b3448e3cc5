import OpenAI, { NotFoundError, BadRequestError } from "openai";
import { describe, expect, it } from "vitest";

import { token, url } from "./helpers.js";

// The official openai SDK against the suite's OpenAI-compatible API at /v1.
const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: token("alice"), maxRetries: 0 });

// A 1×1 transparent PNG.
const png =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

function withImage(url: string): OpenAI.Chat.ChatCompletionMessageParam[] {
  return [
    {
      role: "user",
      content: [
        { type: "text", text: "what is this?" },
        { type: "image_url", image_url: { url } },
      ],
    },
  ];
}

describe("openai SDK: errors", () => {
  it("raises NotFoundError with code model_not_found for an unknown model", async () => {
    const err = await client.chat.completions
      .create({ model: "no-such-model", messages: [{ role: "user", content: "hi" }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect((err as NotFoundError).code).toBe("model_not_found");
    expect((err as NotFoundError).param).toBe("model");
  });

  it("raises NotFoundError for an unknown path, with OpenAI's error body", async () => {
    const err = await client.get("/no/such/path").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect((err as NotFoundError).code).toBe("unknown_url");
    expect((err as NotFoundError).error).toMatchObject({ type: "invalid_request_error" });
  });

  it("raises NotFoundError for a model it cannot retrieve", async () => {
    const err = await client.models.retrieve("no-such-model").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect((err as NotFoundError).code).toBe("model_not_found");
  });
});

describe("openai SDK: models and embeddings", () => {
  it("retrieves a model", async () => {
    const m = await client.models.retrieve("wick-hash-384");
    expect(m).toMatchObject({ id: "wick-hash-384", object: "model", owned_by: "hash" });
  });

  it("creates embeddings, as floats and as base64 (which the SDK decodes)", async () => {
    const floats = await client.embeddings.create({
      model: "wick-hash-384",
      input: ["hello world", "goodbye"],
      encoding_format: "float",
    });
    expect(floats.object).toBe("list");
    expect(floats.data.map((d) => d.index)).toEqual([0, 1]);
    const first = floats.data[0]!.embedding;
    expect(first).toHaveLength(384);
    const norm = Math.hypot(...first);
    expect(norm).toBeCloseTo(1, 5);
    expect(floats.usage).toMatchObject({ prompt_tokens: expect.any(Number), total_tokens: expect.any(Number) });

    // The SDK asks for base64 by default and decodes it to numbers.
    const decoded = await client.embeddings.create({ model: "wick-hash-384", input: "hello world" });
    const again = decoded.data[0]!.embedding;
    expect(again).toHaveLength(384);
    again.forEach((x, i) => expect(x).toBeCloseTo(first[i]!, 6));
  });

  it("refuses dimensions the model cannot make", async () => {
    const err = await client.embeddings
      .create({ model: "wick-hash-384", input: "hi", dimensions: 12 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
  });
});

describe("openai SDK: image parts", () => {
  it("reaches an image-capable scripted model", async () => {
    const resp = await client.chat.completions.create({
      model: "script:llmedge-seeing",
      messages: withImage(`data:image/png;base64,${png}`),
    });
    expect(resp.choices[0]?.message.content).toBe("I see 1 images.");
  });

  it("is refused by a text-only scripted model", async () => {
    const err = await client.chat.completions
      .create({ model: "script:llmedge-blind", messages: withImage(`data:image/png;base64,${png}`) })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect((err as BadRequestError).message).toContain("does not accept images");
  });

  it("refuses an image URL on loopback: the network guard fetches public addresses only", async () => {
    const err = await client.chat.completions
      .create({ model: "script:llmedge-seeing", messages: withImage(`${url}/health`) })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect((err as BadRequestError).message).toContain("not a public address");
  });
});
