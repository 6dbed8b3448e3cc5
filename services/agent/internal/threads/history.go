package threads

import (
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/wick-agent/wick/llm"
	"github.com/wick-agent/wick/services/agent/internal/ids"
	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// A thread is stored in two parts, so that a save does not grow with the
// conversation: its meta part, the state with its messages cleared, which
// every save rewrites; and its messages, one JSON array, to which a save
// appends only the messages added since the store last saved or loaded the
// state. A save whose history does not begin with exactly those messages
// (an eviction cut an old tool result, a summary rewrote the history) writes
// the thread whole.

// stored is a store's note, kept on the state (loop.AgentState.Stored), of
// the messages it holds for that state.
type stored struct {
	// version is the thread version the note describes; the note is used
	// only by a save over that version.
	version int64
	// gen names the stored messages array: every whole write starts a new
	// one, so an append never lands on an array another writer replaced.
	gen string
	// size is the stored array's length in bytes, brackets included.
	size int64
	// heads describe the stored messages, in order.
	heads []head
}

// noteLoaded gives a state just loaded from an array of size bytes its
// note. A history that leaves tool calls unanswered gets none: appending to
// it could pair a new result with an old call, which only a check of the
// whole history sees, so its next save writes it whole.
func noteLoaded(st *loop.AgentState, gen string, size int64, complete bool) {
	if !complete || gen == "" {
		return
	}
	st.Stored = &stored{version: st.Version, gen: gen, size: size, heads: appendHeads(nil, st.Messages)}
}

// base returns the state's note when it describes version prev and the
// state's history begins with exactly the messages it lists, so the save
// may append; nil otherwise.
func base(state *loop.AgentState, prev int64) *stored {
	n, _ := state.Stored.(*stored)
	if n == nil || n.version != prev || len(state.Messages) < len(n.heads) {
		return nil
	}
	heads := n.heads
	msgs := state.Messages[:len(heads)]
	for i := range heads {
		if !heads[i].is(&msgs[i]) {
			return nil
		}
	}
	return n
}

// head is what a note keeps of a stored message to tell whether a writer
// still has it unchanged: where its content and its calls are in memory.
// The pointers keep that memory alive, so memory at the same place is the
// same content, and a message anyone changed points elsewhere: eviction
// and the byte bound give a tool result a new string, the loop gives an
// assistant message a new slice of calls; nothing edits them in place, or
// rewrites a stored message's role, call id or name. A message is then a
// few word comparisons, checked in place (head.is): about 1.6 µs for a
// 2,000-message history (2.0 µs when each head was built to compare), where
// comparing every field cost 10 µs, three times the rest of a memory
// store's save.
type head struct {
	content *byte
	calls   *llm.ToolCall
	n       int // len(Content)
	ncalls  int
}

func headOf(m *llm.Message) head {
	h := head{n: len(m.Content), ncalls: len(m.ToolCalls)}
	// An empty string or slice has no memory of its own to compare.
	if h.n > 0 {
		h.content = unsafe.StringData(m.Content)
	}
	if h.ncalls > 0 {
		h.calls = unsafe.SliceData(m.ToolCalls)
	}
	return h
}

// is reports whether h is m's head: headOf(m) == h, without building it.
func (h *head) is(m *llm.Message) bool {
	if len(m.Content) != h.n || len(m.ToolCalls) != h.ncalls {
		return false
	}
	return (h.n == 0 || unsafe.StringData(m.Content) == h.content) &&
		(h.ncalls == 0 || unsafe.SliceData(m.ToolCalls) == h.calls)
}

// appendHeads appends the heads of msgs to hs.
func appendHeads(hs []head, msgs []llm.Message) []head {
	hs = slices.Grow(hs, len(msgs))
	for i := range msgs {
		hs = append(hs, headOf(&msgs[i]))
	}
	return hs
}

// encoded is one save, encoded.
type encoded struct {
	// meta is the state with its messages cleared.
	meta []byte
	// from is the note appended to, nil for a whole write.
	from *stored
	// msgs is, for a whole write, the whole messages array; for an
	// append, the bytes that replace the array's closing bracket (the new
	// messages, after a comma when the array had any, and a closing
	// bracket), empty when no message was added.
	msgs []byte
	// size is the stored array's length after the save.
	size int64
	// gen is the stored array's generation after the save.
	gen string
}

// encodeSave validates and encodes state for a save over the version it was
// loaded at (prev), which the caller has already advanced in state. The
// history is validated in full for a whole write and only from the first
// new message for an append: the stored part was validated when it was
// saved or loaded, and a complete history (every call answered) stays valid
// exactly when what follows it is valid on its own.
func encodeSave(state *loop.AgentState, prev int64, b Bounds) (*encoded, error) {
	if !ids.Valid(state.ThreadID) {
		return nil, fmt.Errorf("save: invalid thread id %q", state.ThreadID)
	}
	var from *stored
	if prev > 0 {
		from = base(state, prev)
	}
	// A copy with the messages cleared, not a list of fields, so that a
	// field added to the state is never left out of the meta part.
	meta := *state
	meta.Messages, meta.Stored = nil, nil
	e := &encoded{from: from}
	var err error
	if e.meta, err = marshal(&meta); err != nil {
		return nil, fmt.Errorf("encode thread: %w", err)
	}
	if from == nil {
		if err := validateSave(state.ThreadID, state.Messages, 0); err != nil {
			return nil, err
		}
		if e.msgs, err = marshal(state.Messages); err != nil {
			return nil, fmt.Errorf("encode thread: %w", err)
		}
		if state.Messages == nil {
			e.msgs = []byte("[]")
		}
		e.size, e.gen = int64(len(e.msgs)), ids.New("g_")
	} else {
		added := state.Messages[len(from.heads):]
		if err := validateSave(state.ThreadID, added, len(from.heads)); err != nil {
			return nil, err
		}
		e.size, e.gen = from.size, from.gen
		if len(added) > 0 {
			arr, err := marshal(added)
			if err != nil {
				return nil, fmt.Errorf("encode thread: %w", err)
			}
			// arr is "[m,…]": its opening bracket becomes the comma that
			// follows the stored messages, or goes when there are none.
			if len(from.heads) > 0 {
				arr[0] = ','
			} else {
				arr = arr[1:]
			}
			e.msgs = arr
			e.size += int64(len(arr)) - 1
		}
	}
	if err := b.checkSize(state.ThreadID, int64(len(e.meta))+e.size); err != nil {
		return nil, err
	}
	return e, nil
}

// validateSave checks msgs, which start at message index at of the thread.
func validateSave(threadID string, msgs []llm.Message, at int) error {
	if err := loop.Messages(msgs).ValidateHistory(); err != nil {
		if at > 0 {
			err = fmt.Errorf("in the messages from index %d: %w", at, err)
		}
		return fmt.Errorf("save thread %s: %w: %w", threadID, ErrInvalidHistory, err)
	}
	return nil
}

// note is the state's note once e is stored at version.
func (e *encoded) note(version int64, msgs []llm.Message) *stored {
	n := &stored{version: version, gen: e.gen, size: e.size}
	if e.from == nil {
		// Room for the rounds that follow, so that they do not copy
		// the heads of a long history again at once.
		n.heads = appendHeads(make([]head, 0, len(msgs)+len(msgs)/4), msgs)
	} else {
		// Grows the note's array in place: an older note sharing it reads
		// only up to its own length.
		n.heads = appendHeads(e.from.heads, msgs[len(e.from.heads):])
	}
	return n
}

// decodeParts reads a thread stored in two parts (see decodeWhole).
func decodeParts(threadID string, meta, msgs []byte, version int64, gen string) (*loop.AgentState, error) {
	var st loop.AgentState
	if err := unmarshal(meta, &st); err != nil {
		return nil, fmt.Errorf("load thread %s: %w: %w", threadID, ErrCorrupt, err)
	}
	st.Messages = nil
	if err := unmarshal(msgs, &st.Messages); err != nil {
		return nil, fmt.Errorf("load thread %s: %w: %w", threadID, ErrCorrupt, err)
	}
	complete, err := checkLoaded(threadID, &st, version)
	if err != nil {
		return nil, err
	}
	noteLoaded(&st, gen, int64(len(msgs)), complete)
	return &st, nil
}

// checkLoaded checks a loaded state's history, so a corrupted thread is
// reported as such instead of reaching a provider or the loop, and reports
// whether it is complete. Tool calls left without results are the one flaw
// it lets through: a writer that died between a model's reply and its
// tools' results leaves them, and the next run answers them as interrupted
// (loop.RepairToolCalls), so the thread stays usable.
func checkLoaded(threadID string, st *loop.AgentState, version int64) (complete bool, err error) {
	err = loop.Messages(st.Messages).ValidateHistory()
	if err != nil && !errors.Is(err, loop.ErrUnansweredCall) {
		return false, fmt.Errorf("load thread %s: %w: %w", threadID, ErrCorrupt, err)
	}
	st.Version = version
	if st.Messages == nil {
		st.Messages = []llm.Message{}
	}
	return err == nil, nil
}
