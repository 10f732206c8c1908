package fieldpath

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Projection decodes from a JSON object only what a set of paths can reach.
// Looking for references among thousands of dependents, decoding each one
// whole into maps costs several times more than the references: the
// projection reads the document once, keeps the values the paths lead to
// and steps over everything else (managed fields, status, ...) without
// allocating. A path evaluated on the projected object finds exactly what it
// finds on the whole one, and malformed JSON is refused as json.Unmarshal
// refuses it.
type Projection struct {
	root *projNode
}

// projNode is one field position shared by the paths that pass through it.
type projNode struct {
	// fields are the fields looked up when the value here is an object.
	fields map[string]*projNode
	// elem is where a path continues for each element when the value here
	// is a list that a path enters with [*].
	elem *projNode
}

// NewProjection returns the projection for paths.
func NewProjection(paths ...Path) *Projection {
	root := &projNode{}
	for _, p := range paths {
		n := root
		for _, s := range p.segments {
			if n.fields == nil {
				n.fields = map[string]*projNode{}
			}
			child, ok := n.fields[s.field]
			if !ok {
				child = &projNode{}
				n.fields[s.field] = child
			}
			n = child
			if s.each {
				if n.elem == nil {
					n.elem = &projNode{}
				}
				n = n.elem
			}
		}
	}
	return &Projection{root: root}
}

// InList returns the path that applies p to every element of the list in
// field: for p = .spec.vpcRef.name and field "items", .items[*].spec.vpcRef.name.
func (p Path) InList(field string) Path {
	return Path{
		raw:      "." + field + "[*]" + p.raw,
		segments: append([]segment{{field: field, each: true}}, p.segments...),
	}
}

// Decode returns the parts of the JSON object data that the projection's
// paths reach, shaped as json.Unmarshal into a map would shape them. Values
// that no path can go on from (numbers, booleans, null, and objects or lists
// where no path continues) are nil.
func (p *Projection) Decode(data []byte) (map[string]interface{}, error) {
	s := &scanner{data: data}
	s.skipSpace()
	var out map[string]interface{}
	switch s.peek() {
	case '{':
		v, err := s.object(p.root, 1)
		if err != nil {
			return nil, err
		}
		if out, _ = v.(map[string]interface{}); out == nil {
			out = map[string]interface{}{}
		}
	case 'n':
		if err := s.literal("null"); err != nil {
			return nil, err
		}
		out = map[string]interface{}{}
	default:
		if _, err := s.value(nil, 0); err != nil {
			return nil, err
		}
		return nil, errors.New("json: the document is not an object")
	}
	s.skipSpace()
	if s.pos != len(s.data) {
		return nil, s.errorf("invalid character %q after top-level value", s.data[s.pos])
	}
	return out, nil
}

// maxDepth is encoding/json's nesting limit, so that both refuse the same
// documents.
const maxDepth = 10000

type scanner struct {
	data []byte
	pos  int
}

func (s *scanner) errorf(format string, args ...interface{}) error {
	return fmt.Errorf("json: offset %d: %s", s.pos, fmt.Sprintf(format, args...))
}

func (s *scanner) peek() byte {
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

func (s *scanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// value reads one value. n is where the paths stand at this value; nil
// means no path reaches it, and it is only checked and skipped.
func (s *scanner) value(n *projNode, depth int) (interface{}, error) {
	s.skipSpace()
	if s.pos >= len(s.data) {
		return nil, s.errorf("unexpected end of JSON input")
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		return s.object(n, depth+1)
	case c == '[':
		return s.array(n, depth+1)
	case c == '"':
		raw, escaped, err := s.scanString()
		if err != nil || n == nil {
			return nil, err
		}
		str, err := decodeString(raw, escaped)
		if err != nil {
			return nil, err
		}
		return str, nil
	case c == 't':
		return nil, s.literal("true")
	case c == 'f':
		return nil, s.literal("false")
	case c == 'n':
		return nil, s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return nil, s.number()
	default:
		return nil, s.errorf("invalid character %q looking for beginning of value", c)
	}
}

func (s *scanner) object(n *projNode, depth int) (interface{}, error) {
	if depth > maxDepth {
		return nil, s.errorf("exceeded max depth")
	}
	s.pos++ // {
	var out map[string]interface{}
	if n != nil && len(n.fields) > 0 {
		out = map[string]interface{}{}
	}
	s.skipSpace()
	if s.peek() == '}' {
		s.pos++
		return asValue(out), nil
	}
	for {
		s.skipSpace()
		if s.peek() != '"' {
			return nil, s.errorf("invalid character looking for beginning of object key string")
		}
		raw, escaped, err := s.scanString()
		if err != nil {
			return nil, err
		}
		var child *projNode
		var keyName string
		if out != nil {
			if !escaped && utf8.Valid(raw) {
				// The common case looks the key up without allocating.
				if child = n.fields[string(raw[1:len(raw)-1])]; child != nil {
					keyName = string(raw[1 : len(raw)-1])
				}
			} else {
				if keyName, err = decodeString(raw, escaped); err != nil {
					return nil, err
				}
				child = n.fields[keyName]
			}
		}
		s.skipSpace()
		if s.peek() != ':' {
			return nil, s.errorf("invalid character after object key")
		}
		s.pos++
		v, err := s.value(child, depth)
		if err != nil {
			return nil, err
		}
		if child != nil {
			out[keyName] = v
		}
		s.skipSpace()
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return asValue(out), nil
		default:
			return nil, s.errorf("invalid character after object key:value pair")
		}
	}
}

// asValue keeps a nil map from turning into a non-nil interface.
func asValue(m map[string]interface{}) interface{} {
	if m == nil {
		return nil
	}
	return m
}

func (s *scanner) array(n *projNode, depth int) (interface{}, error) {
	if depth > maxDepth {
		return nil, s.errorf("exceeded max depth")
	}
	s.pos++ // [
	var elem *projNode
	var out []interface{}
	if n != nil && n.elem != nil {
		elem = n.elem
		out = []interface{}{}
	}
	s.skipSpace()
	if s.peek() == ']' {
		s.pos++
		if out == nil {
			return nil, nil
		}
		return out, nil
	}
	for {
		v, err := s.value(elem, depth)
		if err != nil {
			return nil, err
		}
		if elem != nil {
			out = append(out, v)
		}
		s.skipSpace()
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			if out == nil {
				return nil, nil
			}
			return out, nil
		default:
			return nil, s.errorf("invalid character after array element")
		}
	}
}

// scanString steps over a string, checking its escapes, and returns it
// with its quotes and whether it has escapes.
func (s *scanner) scanString() ([]byte, bool, error) {
	start := s.pos
	s.pos++ // "
	escaped := false
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return s.data[start:s.pos], escaped, nil
		case c == '\\':
			escaped = true
			if s.pos+1 >= len(s.data) {
				s.pos = len(s.data)
				return nil, false, s.errorf("unexpected end of JSON input")
			}
			switch s.data[s.pos+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.pos += 2
			case 'u':
				for i := 2; i < 6; i++ {
					if s.pos+i >= len(s.data) || !isHex(s.data[s.pos+i]) {
						return nil, false, s.errorf("invalid character in \\u hexadecimal character escape")
					}
				}
				s.pos += 6
			default:
				return nil, false, s.errorf("invalid character in string escape code")
			}
		case c < 0x20:
			return nil, false, s.errorf("invalid character %q in string literal", c)
		default:
			s.pos++
		}
	}
	return nil, false, s.errorf("unexpected end of JSON input")
}

// decodeString returns the value of a string scanString stepped over.
func decodeString(raw []byte, escaped bool) (string, error) {
	if !escaped && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), nil
	}
	// Escapes and invalid UTF-8 are decoded as encoding/json decodes them.
	var out string
	err := json.Unmarshal(raw, &out)
	return out, err
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func (s *scanner) literal(word string) error {
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		return s.errorf("invalid literal, want %s", word)
	}
	s.pos += len(word)
	return nil
}

// number checks a number against JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	if s.peek() == '-' {
		s.pos++
	}
	switch c := s.peek(); {
	case c == '0':
		s.pos++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return s.errorf("invalid character in numeric literal")
	}
	if s.peek() == '.' {
		s.pos++
		if !s.digits() {
			return s.errorf("invalid character after decimal point in numeric literal")
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.pos++
		if c := s.peek(); c == '+' || c == '-' {
			s.pos++
		}
		if !s.digits() {
			return s.errorf("invalid character in exponent of numeric literal")
		}
	}
	return nil
}

func (s *scanner) digits() bool {
	start := s.pos
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
	}
	return s.pos > start
}
