package hooks

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// stringArg returns a string argument; a required one must be present and non-empty.
func stringArg(args map[string]any, key string, required bool) (string, error) {
	v, ok := args[key]
	if !ok || v == nil {
		if required {
			return "", fmt.Errorf("missing required argument %q", key)
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("argument %q must be a string", key)
	}
	if required && s == "" {
		return "", fmt.Errorf("argument %q must not be empty", key)
	}
	return s, nil
}

// intArg returns a non-negative integer argument, def when absent. Models
// send numbers as JSON numbers or, sometimes, as strings.
func intArg(args map[string]any, key string, def int) (int, error) {
	v, ok := args[key]
	if !ok || v == nil {
		return def, nil
	}
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case json.Number:
		var err error
		if f, err = x.Float64(); err != nil {
			return 0, fmt.Errorf("argument %q must be an integer", key)
		}
	case string:
		var err error
		if f, err = strconv.ParseFloat(x, 64); err != nil {
			return 0, fmt.Errorf("argument %q must be an integer", key)
		}
	default:
		return 0, fmt.Errorf("argument %q must be an integer", key)
	}
	if f != math.Trunc(f) || f < 0 || f > math.MaxInt32 {
		return 0, fmt.Errorf("argument %q must be a non-negative integer", key)
	}
	return int(f), nil
}

// boolArg returns a boolean argument, false when absent.
func boolArg(args map[string]any, key string) (bool, error) {
	v, ok := args[key]
	if !ok || v == nil {
		return false, nil
	}
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		b, err := strconv.ParseBool(x)
		if err != nil {
			return false, fmt.Errorf("argument %q must be a boolean", key)
		}
		return b, nil
	}
	return false, fmt.Errorf("argument %q must be a boolean", key)
}

func toJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
