package threads

import (
	"errors"
	"fmt"
	"reflect"
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
// still has it unchanged: a copy of every field the store writes, its tool
// calls copied too, so that a message edited in place (a call renamed in the
// stored array, a role or call id rewritten) differs from its copy just as
// a message replaced does. The copy shares the message's strings, and
// comparing a string with itself stops at its address; fields that are
// empty or a known role are compared without a call. It still costs several
// times what comparing addresses alone did (BenchmarkUnchangedCheck2000),
// which missed every edit made in place.
// A call's Args map is compared by identity and size, not by content: a
// writer that changes a call's arguments gives it a new map, as the loop's
// approval edit does.
type head struct {
	content, toolCallID, name string
	// role is roleCode of the message's role; other is the role itself
	// when it is none of the known ones.
	role  uint8
	other string
	calls []callHead
}

// callHead is a head's copy of one tool call's stored fields (RawArgs and
// ArgsErr are not stored).
type callHead struct {
	id, name string
	// args is the call's map itself, which keeps its memory from being
	// reused by another map while the note lives; nargs is its size then.
	args  map[string]any
	nargs int
}

// sameArgs reports whether args is the very map h copied, at the size it had.
func (h *callHead) sameArgs(args map[string]any) bool {
	return len(args) == h.nargs && reflect.ValueOf(args).Pointer() == reflect.ValueOf(h.args).Pointer()
}

// roleCode numbers the known roles, 0 for any other; comparing with a
// constant compiles to a few instructions, not a call.
func roleCode(role string) uint8 {
	switch role {
	case llm.RoleUser:
		return 1
	case llm.RoleAssistant:
		return 2
	case llm.RoleTool:
		return 3
	case llm.RoleSystem:
		return 4
	}
	return 0
}

// same reports a == b. Strings are immutable, so one that still starts at
// the address it had holds the same text: that test is inline, while a == b
// is a call into the runtime that would dominate a check of a long history.
// Text that moved is compared byte by byte.
func same(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

func headOf(m *llm.Message) head {
	h := head{content: m.Content, toolCallID: m.ToolCallID, name: m.Name, role: roleCode(m.Role)}
	if h.role == 0 {
		h.other = m.Role
	}
	if len(m.ToolCalls) > 0 {
		h.calls = make([]callHead, len(m.ToolCalls))
		for i := range m.ToolCalls {
			c := &m.ToolCalls[i]
			h.calls[i] = callHead{id: c.ID, name: c.Name, args: c.Args, nargs: len(c.Args)}
		}
	}
	return h
}

// is reports whether m still has every field h copied; the common message,
// without calls or a call id, needs no more than its first test.
func (h *head) is(m *llm.Message) bool {
	if len(m.ToolCalls) != len(h.calls) || roleCode(m.Role) != h.role || !same(m.Content, h.content) {
		return false
	}
	if len(h.calls) == 0 && len(h.toolCallID)|len(h.name)|len(h.other)|len(m.ToolCallID)|len(m.Name) == 0 {
		return true
	}
	return h.isRest(m)
}

// isRest is is for the fields most messages leave empty.
func (h *head) isRest(m *llm.Message) bool {
	if !same(m.ToolCallID, h.toolCallID) || !same(m.Name, h.name) || (h.role == 0 && m.Role != h.other) {
		return false
	}
	for i := range h.calls {
		c, hc := &m.ToolCalls[i], &h.calls[i]
		if !same(c.ID, hc.id) || !same(c.Name, hc.name) || !hc.sameArgs(c.Args) {
			return false
		}
	}
	return true
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
