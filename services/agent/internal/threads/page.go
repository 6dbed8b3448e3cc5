package threads

import (
	"strings"
	"time"
)

// Page sizes of List.
const (
	// DefaultPageSize is the page size of a ListQuery without one.
	DefaultPageSize = 50
	// MaxPageSize bounds a ListQuery's Limit.
	MaxPageSize = 200
)

// ListQuery selects one page of a user's threads.
type ListQuery struct {
	// AgentID keeps the threads of one agent; "" keeps all.
	AgentID string
	// Words keeps the threads whose listed title holds each of them; they
	// are compared in lower case (strings.ToLower on both sides).
	Words []string
	// SkipPrefix leaves out the threads whose id starts with it (sub-agents'
	// threads); "" leaves out none.
	SkipPrefix string
	// After is where the previous page ended; nil reads the first page.
	After *Cursor
	// Limit is the most threads of the page: 0 is DefaultPageSize, and it
	// is cut to MaxPageSize.
	Limit int
}

// Cursor is a position in the list order: updated time, then thread id,
// both descending. A page continues with the threads strictly after it,
// so that a thread saved since (it moved to the front) is not listed again
// and one deleted since leaves no gap.
type Cursor struct {
	At       time.Time
	ThreadID string
}

// Page is one page of List.
type Page struct {
	Threads []Summary
	// Next is where the next page starts; nil when the list ended. A page
	// that read its whole scan budget (see scanBudget) may hold fewer than
	// Limit threads, even none, and still have a Next.
	Next *Cursor
}

func (q ListQuery) limit() int {
	switch {
	case q.Limit <= 0:
		return DefaultPageSize
	case q.Limit > MaxPageSize:
		return MaxPageSize
	}
	return q.Limit
}

// scanBudget bounds the threads one page reads, filtered out or not, so
// that a page of one agent's threads, or of a search, costs about the same
// however many threads the user has: four pages' worth.
func scanBudget(limit int) int { return 4 * limit }

// keeps says whether the page's filters keep a thread.
func (q ListQuery) keeps(threadID, agentID, title string) bool {
	if q.SkipPrefix != "" && strings.HasPrefix(threadID, q.SkipPrefix) {
		return false
	}
	if q.AgentID != "" && agentID != q.AgentID {
		return false
	}
	if len(q.Words) == 0 {
		return true
	}
	t := strings.ToLower(title)
	for _, w := range q.Words {
		if !strings.Contains(t, w) {
			return false
		}
	}
	return true
}

// passed says whether a thread updated at with id threadID is at c or
// before it in the list order (newer, or as new with an id not smaller):
// an earlier page had it.
func (c Cursor) passed(at time.Time, threadID string) bool {
	if !at.Equal(c.At) {
		return at.After(c.At)
	}
	return threadID >= c.ThreadID
}
