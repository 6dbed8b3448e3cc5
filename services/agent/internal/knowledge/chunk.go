package knowledge

import (
	"strings"
	"unicode/utf8"
)

// Content types, which decide how a text is chunked.
const (
	TypeMarkdown = "markdown"
	TypeText     = "text"
)

// section is a run of paragraphs under one heading path.
type section struct {
	heading    string
	paragraphs []string
}

// Split cuts text into chunks of about size bytes along its structure:
// Markdown headings start sections (the chunk keeps the heading path,
// "Setup > Redis"), blank lines separate paragraphs, and paragraphs are
// packed into chunks. A paragraph longer than size is cut at word
// boundaries. Consecutive chunks of one section share overlap bytes, so a
// sentence cut at a boundary is whole in one of them.
func Split(text, contentType string, size, overlap int) []Chunk {
	var sections []section
	if contentType == TypeMarkdown {
		sections = markdownSections(text)
	} else {
		sections = []section{{paragraphs: paragraphs(text)}}
	}
	var out []Chunk
	for _, sec := range sections {
		for _, t := range pack(sec.paragraphs, size, overlap) {
			out = append(out, Chunk{Index: len(out), Heading: sec.heading, Text: t})
		}
	}
	return out
}

// markdownSections splits at ATX headings ("# Title") outside code fences.
func markdownSections(text string) []section {
	var out []section
	var path []string // heading at each level, "" where skipped
	cur := section{}
	var buf []string
	inFence := false
	flush := func() {
		cur.paragraphs = append(cur.paragraphs, paragraphs(strings.Join(buf, "\n"))...)
		buf = buf[:0]
	}
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			inFence = !inFence
		}
		level, title := headingOf(line)
		if inFence || level == 0 {
			buf = append(buf, line)
			continue
		}
		flush()
		if len(cur.paragraphs) > 0 {
			out = append(out, cur)
		}
		for len(path) < level {
			path = append(path, "")
		}
		path = append(path[:level-1], title)
		var parts []string
		for _, p := range path {
			if p != "" {
				parts = append(parts, p)
			}
		}
		cur = section{heading: strings.Join(parts, " > ")}
	}
	flush()
	if len(cur.paragraphs) > 0 {
		out = append(out, cur)
	}
	return out
}

// headingOf returns the level and title of an ATX heading line, or 0.
func headingOf(line string) (int, string) {
	if len(line) > 0 && line[0] == ' ' {
		return 0, "" // indented: code or a continuation
	}
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(line) && line[n] != ' ' && line[n] != '\t') {
		return 0, ""
	}
	title := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(line[n:]), "#"))
	if title == "" {
		return 0, ""
	}
	return n, title
}

// paragraphs splits at blank lines and drops empty ones.
func paragraphs(text string) []string {
	var out []string
	for _, p := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// pack joins paragraphs into chunks of at most about size bytes.
func pack(paras []string, size, overlap int) []string {
	var out []string
	var cur strings.Builder
	emit := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	start := func() {
		// A new chunk of the same section starts with the end of the last.
		if len(out) > 0 && overlap > 0 {
			cur.WriteString(tail(out[len(out)-1], overlap))
			cur.WriteString(" … ")
		}
	}
	for _, p := range paras {
		for _, piece := range cut(p, size) {
			if cur.Len() > 0 && cur.Len()+2+len(piece) > size {
				emit()
				start()
			}
			if cur.Len() > 0 && !strings.HasSuffix(cur.String(), " … ") {
				cur.WriteString("\n\n")
			}
			cur.WriteString(piece)
		}
	}
	emit()
	return out
}

// cut splits a paragraph longer than size at spaces (or anywhere, on a rune
// boundary, in a word longer than size).
func cut(p string, size int) []string {
	var out []string
	for len(p) > size {
		i := strings.LastIndexByte(p[:size], ' ')
		if i <= size/2 {
			i = size
			for i > 0 && !utf8.RuneStart(p[i]) {
				i--
			}
		}
		out = append(out, strings.TrimSpace(p[:i]))
		p = strings.TrimSpace(p[i:])
	}
	if p != "" {
		out = append(out, p)
	}
	return out
}

// tail returns about the last n bytes of s, starting at a word.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	t := s[len(s)-n:]
	if i := strings.IndexByte(t, ' '); i >= 0 && i < len(t)-1 {
		return t[i+1:]
	}
	for len(t) > 0 && !utf8.RuneStart(t[0]) {
		t = t[1:]
	}
	return t
}
