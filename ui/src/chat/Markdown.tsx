// Markdown (GFM) of the chat. Code blocks are highlighted by rehype-highlight,
// loaded only when a message has one: highlight.js's grammars are most of
// its size and most messages have no code.
import { Fragment, memo, useEffect, useState } from "react";
import ReactMarkdown, { type Options } from "react-markdown";
import remarkGfm from "remark-gfm";

import { hasCode, splitBlocks, splitParagraph } from "./blocks";

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

// A piece of a paragraph: its inline Markdown, without a paragraph of its own.
const inlineComponents: Options["components"] = { ...components, p: ({ children }) => <>{children}</> };

const Piece = memo(function Piece({ text }: { text: string }) {
  return (
    <ReactMarkdown remarkPlugins={remarkPlugins} components={inlineComponents}>
      {text}
    </ReactMarkdown>
  );
});

/** A long paragraph in pieces (splitParagraph): a new token re-parses the last piece only. */
const LongParagraph = memo(function LongParagraph({ pieces }: { pieces: string[] }) {
  return (
    <p>
      {pieces.map((t, i) => (
        <Fragment key={i}>
          {i > 0 && " "}
          <Piece text={t} />
        </Fragment>
      ))}
    </p>
  );
});

/**
 * Markdown renders text block by block, and a long paragraph piece by
 * piece; unchanged blocks and pieces are not parsed again, so that the
 * parse per token of a streaming reply stays short however long it grows.
 */
export const Markdown = memo(function Markdown({ text }: { text: string }) {
  const rehype = useHighlight(hasCode(text));
  const blocks = splitBlocks(text);
  return (
    <div className="md">
      {blocks.map((b, i) => {
        const pieces = splitParagraph(b);
        return pieces.length > 1 ? <LongParagraph key={i} pieces={pieces} /> : <Block key={i} text={b} rehype={rehype} />;
      })}
    </div>
  );
});
