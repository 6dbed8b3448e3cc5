package threads

import (
	"bytes"
	"errors"
	"fmt"
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
	// copies are the stored messages, as the writer had them.
	copies copies
}

// noteLoaded gives a state just loaded from an array of size bytes its
// note. A history that leaves tool calls unanswered gets none: appending to
// it could pair a new result with an old call, which only a check of the
// whole history sees, so its next save writes it whole.
func noteLoaded(st *loop.AgentState, gen string, size int64, complete bool) {
	if !complete || gen == "" {
		return
	}
	st.Stored = &stored{version: st.Version, gen: gen, size: size, copies: copiesOf(st.Messages)}
}

// base returns the state's note when it describes version prev and the
// state's history begins with exactly the messages it lists, so the save
// may append; nil otherwise.
func base(state *loop.AgentState, prev int64) *stored {
	n, _ := state.Stored.(*stored)
	if n == nil || n.version != prev || !n.copies.heldBy(state.Messages) {
		return nil
	}
	return n
}

// copies is what a note keeps of the stored messages to tell whether a
// writer still begins its history with them unchanged: a copy of each
// message's struct, and of each of its tool calls, so that a message edited
// in place (a call renamed in the stored array, a role or call id
// rewritten) differs from its copy just as a message replaced does.
//
// The copies share the messages' strings, and keep them alive: a string
// still at the address and of the length it had holds the same text, as
// strings are immutable. A writer that left its messages alone thus holds
// structs bit for bit equal to the copies, which one comparison of the two
// arrays' memory tells, as fast as the runtime compares bytes; the calls,
// which live apart from their messages, are then compared one by one.
// Copying each message's fields into a head of its own and comparing them
// field by field cost several times as much (BenchmarkUnchangedCheck2000).
// Messages that differ in memory are compared field by field, so a field
// holding the same text at another address is still the same.
type copies struct {
	msgs []llm.Message
	// calls are the tool calls of msgs, in order.
	calls []callCopy
}

// callCopy is a copy of a tool call's stored fields (RawArgs and ArgsErr
// are not stored), and where the call is: while its message still has the
// very slice of calls it had, the writer's call is there. The Args map is
// compared by identity and size, not by content: a writer that changes a
// call's arguments gives it a new map, as the loop's approval edit does.
type callCopy struct {
	at       *llm.ToolCall
	id, name string
	args     map[string]any
	nargs    int
}

// with returns c with msgs copied after its messages. It grows c's arrays
// in place: a note sharing them reads only up to its own lengths.
func (c copies) with(msgs []llm.Message) copies {
	c.msgs = append(c.msgs, msgs...)
	for i := range msgs {
		for j := range msgs[i].ToolCalls {
			tc := &msgs[i].ToolCalls[j]
			c.calls = append(c.calls, callCopy{at: tc, id: tc.ID, name: tc.Name, args: tc.Args, nargs: len(tc.Args)})
		}
	}
	return c
}

// copiesOf copies msgs, with room for a quarter more, so that the saves
// that follow do not copy a long history again at once.
func copiesOf(msgs []llm.Message) copies {
	var ncalls int
	for i := range msgs {
		ncalls += len(msgs[i].ToolCalls)
	}
	c := copies{
		msgs:  make([]llm.Message, 0, len(msgs)+len(msgs)/4),
		calls: make([]callCopy, 0, ncalls+ncalls/4),
	}
	return c.with(msgs)
}

// heldBy reports whether msgs begins with the copied messages, every stored
// field unchanged.
func (c *copies) heldBy(msgs []llm.Message) bool {
	if len(msgs) < len(c.msgs) {
		return false
	}
	msgs = msgs[:len(c.msgs)]
	if !bytes.Equal(memory(msgs), memory(c.msgs)) {
		return c.heldApart(msgs)
	}
	// Every message has the very calls it had: each copy's call is the
	// writer's.
	for i := range c.calls {
		if cc := &c.calls[i]; !cc.is(cc.at) {
			return false
		}
	}
	return true
}

// heldApart is heldBy for messages that differ from their copies in
// memory: they are compared field by field, and their calls wherever they
// are now.
func (c *copies) heldApart(msgs []llm.Message) bool {
	calls := c.calls
	for i := range msgs {
		m, cm := &msgs[i], &c.msgs[i]
		if m.Role != cm.Role || m.Content != cm.Content || m.ToolCallID != cm.ToolCallID || m.Name != cm.Name ||
			len(m.ToolCalls) != len(cm.ToolCalls) {
			return false
		}
		for j := range m.ToolCalls {
			if !calls[j].is(&m.ToolCalls[j]) {
				return false
			}
		}
		calls = calls[len(m.ToolCalls):]
	}
	return true
}

// memory is the bytes msgs occupy.
func memory(msgs []llm.Message) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(msgs))), len(msgs)*int(unsafe.Sizeof(llm.Message{})))
}

// is reports whether tc still has every field c copied. The map's size is
// read through c, which is the same map when tc's is: the load does not
// wait for tc's, so a check of many calls has both in flight at once.
func (c *callCopy) is(tc *llm.ToolCall) bool {
	return mapAt(tc.Args) == mapAt(c.args) && len(c.args) == c.nargs && same(tc.ID, c.id) && same(tc.Name, c.name)
}

// same reports a == b; a string still at its address is told inline,
// without the runtime's call that compares text.
func same(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// mapAt is where m is: a map value is a pointer to the map.
func mapAt(m map[string]any) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&m)) }

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
		added := state.Messages[len(from.copies.msgs):]
		if err := validateSave(state.ThreadID, added, len(from.copies.msgs)); err != nil {
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
			if len(from.copies.msgs) > 0 {
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
		n.copies = copiesOf(msgs)
	} else {
		n.copies = e.from.copies.with(msgs[len(e.from.copies.msgs):])
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
