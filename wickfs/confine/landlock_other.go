//go:build !linux

package confine

// ABI is 0: Landlock is a Linux security module.
func ABI() int { return 0 }

func enforce(Policy) error { return ErrUnavailable }
