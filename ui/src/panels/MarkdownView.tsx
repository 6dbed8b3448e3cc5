// A Markdown file rendered as a document (GFM: tables, task lists,
// strikethrough; code blocks highlighted). Loaded lazily with its parsers.
// react-markdown renders no raw HTML and drops javascript: links, so an
// agent's file cannot run script on the UI's origin.
import type { AnchorHTMLAttributes } from "react";
import Markdown from "react-markdown";
import rehypeHighlight from "rehype-highlight";
import remarkGfm from "remark-gfm";

const remarkPlugins = [remarkGfm];
const rehypePlugins = [rehypeHighlight];
const components = {
  // Links leave the UI: a click must not navigate away from the chat.
  a: ({ node: _node, ...props }: AnchorHTMLAttributes<HTMLAnchorElement> & { node?: unknown }) => (
    <a {...props} target="_blank" rel="noopener noreferrer" />
  ),
};

export default function MarkdownView({ text }: { text: string }) {
  return (
    <div className="wp-markdown" data-testid="canvas-markdown">
      <Markdown remarkPlugins={remarkPlugins} rehypePlugins={rehypePlugins} components={components}>
        {text}
      </Markdown>
    </div>
  );
}
