// Markdown (GFM) of the chat. Code blocks are highlighted by rehype-highlight,
// loaded only when a message has one: highlight.js's grammars are most of
// its size and most messages have no code.
import { memo, useEffect, useState } from "react";
import ReactMarkdown, { type Options } from "react-markdown";
import remarkGfm from "remark-gfm";

import { hasCode, splitBlocks } from "./blocks";

type Plugins = NonNullable<Options["rehypePlugins"]>;

const remarkPlugins = [remarkGfm];
let highlight: Plugins | undefined;
let loadingHighlight: Promise<Plugins> | undefined;

function loadHighlight(): Promise<Plugins> {
  loadingHighlight ??= import("rehype-highlight").then((m) => {
    highlight = [[m.default, { detect: false }]];
    return highlight;
  });
  return loadingHighlight;
}

function useHighlight(needed: boolean): Plugins | undefined {
  const [plugins, setPlugins] = useState(highlight);
  useEffect(() => {
    if (!needed || plugins) return;
    let live = true;
    loadHighlight().then(
      (p) => live && setPlugins(p),
      () => {}, // Without it, code is shown plain.
    );
    return () => {
      live = false;
    };
  }, [needed, plugins]);
  return plugins;
}

// Links open in a new tab: the chat must not be navigated away from.
const components: Options["components"] = {
  a: ({ node: _, ...props }) => <a {...props} target="_blank" rel="noreferrer noopener" />,
};

const Block = memo(function Block({ text, rehype }: { text: string; rehype: Plugins | undefined }) {
  return (
    <ReactMarkdown remarkPlugins={remarkPlugins} {...(rehype ? { rehypePlugins: rehype } : {})} components={components}>
      {text}
    </ReactMarkdown>
  );
});

/** Markdown renders text block by block; unchanged blocks are not parsed again. */
export const Markdown = memo(function Markdown({ text }: { text: string }) {
  const rehype = useHighlight(hasCode(text));
  const blocks = splitBlocks(text);
  return (
    <div className="md">
      {blocks.map((b, i) => (
        <Block key={i} text={b} rehype={rehype} />
      ))}
    </div>
  );
});
