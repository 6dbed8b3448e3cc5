package agui

import "strconv"

// patchOp is one RFC 6902 JSON Patch operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// todoPatch is the JSON Patch from the todo list prev to next, on the
// state {"todos": [...]}: the items that changed in place are replaced,
// new ones added at the end, and the ones past next's end removed, last
// first so that every path stays valid as the patch applies.
func todoPatch(prev, next []todo) []patchOp {
	var ops []patchOp
	for i := range min(len(prev), len(next)) {
		if prev[i] != next[i] {
			ops = append(ops, patchOp{Op: "replace", Path: todoPath(i), Value: next[i]})
		}
	}
	for i := len(prev); i < len(next); i++ {
		ops = append(ops, patchOp{Op: "add", Path: todoPath(i), Value: next[i]})
	}
	for i := len(prev) - 1; i >= len(next); i-- {
		ops = append(ops, patchOp{Op: "remove", Path: todoPath(i)})
	}
	return ops
}

func todoPath(i int) string { return "/todos/" + strconv.Itoa(i) }
