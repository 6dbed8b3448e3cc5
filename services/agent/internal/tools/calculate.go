// Package tools holds the agent's built-in tools (calculate, datetime, and
// web_search and fetch_url where the operator offers them) and the HTTP
// callback tools registered through the API.
package tools

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/wick-agent/wick/services/agent/internal/loop"
)

// Calculator limits.
const (
	// MaxExpressionLen bounds the expression text.
	MaxExpressionLen = 1_000
	// MaxExpressionDepth bounds nesting (parentheses, unary signs, powers).
	MaxExpressionDepth = 64
)

// ErrExpression is wrapped by every calculate error.
var ErrExpression = errors.New("invalid expression")

// Calculate returns the calculate tool: arithmetic on decimals with
// + - * / % ^ (or **), parentheses, unary signs, the constants pi and e and
// the functions sqrt, abs, min, max, floor, ceil, round, exp, ln, log10, log2,
// sin, cos, tan. It parses the expression itself; nothing is evaluated as code.
func Calculate() loop.Tool {
	return &loop.FuncTool{
		ToolName: "calculate",
		ToolDesc: "Evaluate an arithmetic expression, e.g. \"(2 + 3) * 4 ^ 2 / sqrt(16)\". " +
			"Supports + - * / % ^, parentheses, pi, e, and sqrt, abs, min, max, floor, ceil, round, exp, ln, log10, log2, sin, cos, tan.",
		ToolParams: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"expr": map[string]any{"type": "string", "description": "The arithmetic expression"},
			},
			"required": []string{"expr"},
		},
		Fn: func(_ context.Context, args map[string]any) (string, error) {
			expr, ok := args["expr"].(string)
			if !ok {
				expr, ok = args["expression"].(string)
			}
			if !ok {
				return "", fmt.Errorf("%w: missing required argument \"expr\"", ErrExpression)
			}
			v, err := Eval(expr)
			if err != nil {
				return "", err
			}
			return FormatNumber(v), nil
		},
	}
}

// FormatNumber renders a result: integers without a decimal point, others
// with the shortest exact representation.
func FormatNumber(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Eval evaluates an arithmetic expression.
func Eval(expr string) (float64, error) {
	if strings.TrimSpace(expr) == "" {
		return 0, fmt.Errorf("%w: the expression is empty", ErrExpression)
	}
	if len(expr) > MaxExpressionLen {
		return 0, fmt.Errorf("%w: the expression is longer than %d characters", ErrExpression, MaxExpressionLen)
	}
	toks, err := lex(expr)
	if err != nil {
		return 0, err
	}
	p := &parser{toks: toks}
	v, err := p.expr(0)
	if err != nil {
		return 0, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return 0, fmt.Errorf("%w: unexpected %q at position %d", ErrExpression, t.text, t.pos+1)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%w: the result is not a finite number", ErrExpression)
	}
	return v, nil
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokNum
	tokIdent
	tokOp
	tokLParen
	tokRParen
	tokComma
)

type token struct {
	kind tokKind
	text string
	num  float64
	pos  int
}

func lex(s string) ([]token, error) {
	var toks []token
	for i := 0; i < len(s); {
		c := rune(s[i])
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case unicode.IsDigit(c) || c == '.':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
				j++
			}
			// Scientific notation: 1e3, 2.5E-4.
			if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
				k := j + 1
				if k < len(s) && (s[k] == '+' || s[k] == '-') {
					k++
				}
				if k < len(s) && s[k] >= '0' && s[k] <= '9' {
					for k < len(s) && s[k] >= '0' && s[k] <= '9' {
						k++
					}
					j = k
				}
			}
			if s[i:j] == "." {
				return nil, fmt.Errorf("%w: unexpected character '.' at position %d", ErrExpression, i+1)
			}
			v, err := strconv.ParseFloat(s[i:j], 64)
			if err != nil {
				return nil, fmt.Errorf("%w: bad number %q at position %d", ErrExpression, s[i:j], i+1)
			}
			toks = append(toks, token{kind: tokNum, text: s[i:j], num: v, pos: i})
			i = j
		case c < unicode.MaxASCII && (unicode.IsLetter(c) || c == '_'):
			j := i
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			toks = append(toks, token{kind: tokIdent, text: strings.ToLower(s[i:j]), pos: i})
			i = j
		case c == '*' && i+1 < len(s) && s[i+1] == '*':
			toks = append(toks, token{kind: tokOp, text: "^", pos: i})
			i += 2
		case strings.ContainsRune("+-*/%^", c):
			toks = append(toks, token{kind: tokOp, text: string(c), pos: i})
			i++
		case c == '(':
			toks = append(toks, token{kind: tokLParen, text: "(", pos: i})
			i++
		case c == ')':
			toks = append(toks, token{kind: tokRParen, text: ")", pos: i})
			i++
		case c == ',':
			toks = append(toks, token{kind: tokComma, text: ",", pos: i})
			i++
		default:
			return nil, fmt.Errorf("%w: unexpected character %q at position %d", ErrExpression, s[i], i+1)
		}
	}
	return append(toks, token{kind: tokEOF, text: "end of expression", pos: len(s)}), nil
}

// parser is a recursive-descent parser that evaluates as it parses:
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/" | "%") unary }
//	unary   = ("+" | "-") unary | power
//	power   = primary [ "^" unary ]        (right-associative; -2^2 = -4)
//	primary = number | ident | ident "(" expr { "," expr } ")" | "(" expr ")"
type parser struct {
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token { t := p.toks[p.i]; p.i++; return t }

func (p *parser) deeper(depth int) error {
	if depth > MaxExpressionDepth {
		return fmt.Errorf("%w: nested more than %d levels deep", ErrExpression, MaxExpressionDepth)
	}
	return nil
}

func (p *parser) expr(depth int) (float64, error) {
	if err := p.deeper(depth); err != nil {
		return 0, err
	}
	v, err := p.term(depth)
	if err != nil {
		return 0, err
	}
	for t := p.peek(); t.kind == tokOp && (t.text == "+" || t.text == "-"); t = p.peek() {
		p.next()
		r, err := p.term(depth)
		if err != nil {
			return 0, err
		}
		if t.text == "+" {
			v += r
		} else {
			v -= r
		}
	}
	return v, nil
}

func (p *parser) term(depth int) (float64, error) {
	v, err := p.unary(depth)
	if err != nil {
		return 0, err
	}
	for t := p.peek(); t.kind == tokOp && strings.Contains("*/%", t.text); t = p.peek() {
		p.next()
		r, err := p.unary(depth)
		if err != nil {
			return 0, err
		}
		switch t.text {
		case "*":
			v *= r
		case "/":
			if r == 0 {
				return 0, fmt.Errorf("%w: division by zero", ErrExpression)
			}
			v /= r
		case "%":
			if r == 0 {
				return 0, fmt.Errorf("%w: modulo by zero", ErrExpression)
			}
			v = math.Mod(v, r)
		}
	}
	return v, nil
}

func (p *parser) unary(depth int) (float64, error) {
	if err := p.deeper(depth + 1); err != nil {
		return 0, err
	}
	if t := p.peek(); t.kind == tokOp && (t.text == "-" || t.text == "+") {
		p.next()
		v, err := p.unary(depth + 1)
		if t.text == "-" {
			v = -v
		}
		return v, err
	}
	return p.power(depth)
}

func (p *parser) power(depth int) (float64, error) {
	base, err := p.primary(depth)
	if err != nil {
		return 0, err
	}
	if t := p.peek(); t.kind == tokOp && t.text == "^" {
		p.next()
		exp, err := p.unary(depth + 1)
		if err != nil {
			return 0, err
		}
		return math.Pow(base, exp), nil
	}
	return base, nil
}

var constants = map[string]float64{"pi": math.Pi, "e": math.E}

type function struct {
	minArgs, maxArgs int // maxArgs < 0: unbounded
	fn               func(args []float64) (float64, error)
}

func unaryFn(f func(float64) float64) function {
	return function{1, 1, func(a []float64) (float64, error) { return f(a[0]), nil }}
}

var functions = map[string]function{
	"sqrt": {1, 1, func(a []float64) (float64, error) {
		if a[0] < 0 {
			return 0, fmt.Errorf("%w: sqrt of a negative number", ErrExpression)
		}
		return math.Sqrt(a[0]), nil
	}},
	"abs":   unaryFn(math.Abs),
	"floor": unaryFn(math.Floor),
	"ceil":  unaryFn(math.Ceil),
	"round": unaryFn(math.Round),
	"exp":   unaryFn(math.Exp),
	"sin":   unaryFn(math.Sin),
	"cos":   unaryFn(math.Cos),
	"tan":   unaryFn(math.Tan),
	"ln":    logFn(math.Log),
	"log":   logFn(math.Log),
	"log10": logFn(math.Log10),
	"log2":  logFn(math.Log2),
	"min": {1, -1, func(a []float64) (float64, error) {
		m := a[0]
		for _, x := range a[1:] {
			m = math.Min(m, x)
		}
		return m, nil
	}},
	"max": {1, -1, func(a []float64) (float64, error) {
		m := a[0]
		for _, x := range a[1:] {
			m = math.Max(m, x)
		}
		return m, nil
	}},
}

func logFn(f func(float64) float64) function {
	return function{1, 1, func(a []float64) (float64, error) {
		if a[0] <= 0 {
			return 0, fmt.Errorf("%w: logarithm of a non-positive number", ErrExpression)
		}
		return f(a[0]), nil
	}}
}

func (p *parser) primary(depth int) (float64, error) {
	t := p.next()
	switch t.kind {
	case tokNum:
		return t.num, nil
	case tokLParen:
		v, err := p.expr(depth + 1)
		if err != nil {
			return 0, err
		}
		if c := p.next(); c.kind != tokRParen {
			return 0, fmt.Errorf("%w: expected \")\" at position %d, found %q", ErrExpression, c.pos+1, c.text)
		}
		return v, nil
	case tokIdent:
		if p.peek().kind != tokLParen {
			if v, ok := constants[t.text]; ok {
				return v, nil
			}
			return 0, fmt.Errorf("%w: unknown name %q at position %d", ErrExpression, t.text, t.pos+1)
		}
		f, ok := functions[t.text]
		if !ok {
			return 0, fmt.Errorf("%w: unknown function %q at position %d", ErrExpression, t.text, t.pos+1)
		}
		p.next() // "("
		var args []float64
		if p.peek().kind != tokRParen {
			for {
				v, err := p.expr(depth + 1)
				if err != nil {
					return 0, err
				}
				args = append(args, v)
				if p.peek().kind != tokComma {
					break
				}
				p.next()
			}
		}
		if c := p.next(); c.kind != tokRParen {
			return 0, fmt.Errorf("%w: expected \")\" at position %d, found %q", ErrExpression, c.pos+1, c.text)
		}
		if len(args) < f.minArgs || (f.maxArgs >= 0 && len(args) > f.maxArgs) {
			return 0, fmt.Errorf("%w: %s takes %s", ErrExpression, t.text, arity(f))
		}
		return f.fn(args)
	case tokEOF:
		return 0, fmt.Errorf("%w: the expression ends too early", ErrExpression)
	default:
		return 0, fmt.Errorf("%w: unexpected %q at position %d", ErrExpression, t.text, t.pos+1)
	}
}

func arity(f function) string {
	switch {
	case f.maxArgs < 0:
		return fmt.Sprintf("at least %d argument(s)", f.minArgs)
	case f.minArgs == f.maxArgs:
		return fmt.Sprintf("%d argument(s)", f.minArgs)
	default:
		return fmt.Sprintf("%d to %d arguments", f.minArgs, f.maxArgs)
	}
}
