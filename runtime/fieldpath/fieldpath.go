// Package fieldpath reads references out of objects by dot paths such as
// .spec.vpcRef.name, where a segment ending in [*] looks at every element of
// a list: .spec.networks[*].vpcRef.name.
package fieldpath

import (
	"fmt"
	"strings"
)

// MaxLength bounds a path, as the DependencyRule schema does.
const MaxLength = 256

// Path is a parsed field path.
type Path struct {
	raw      string
	segments []segment
}

type segment struct {
	field string
	each  bool // the field is a list; look at every element
}

// Parse checks and parses a path. Errors name the offending position.
func Parse(path string) (Path, error) {
	if path == "" {
		return Path{}, fmt.Errorf("field path is empty: write it like .spec.vpcRef.name")
	}
	if len(path) > MaxLength {
		return Path{}, fmt.Errorf("field path is %d characters long, at most %d are allowed", len(path), MaxLength)
	}
	if path[0] != '.' {
		return Path{}, fmt.Errorf("field path %q must start with a dot, like .spec.vpcRef.name", path)
	}
	p := Path{raw: path}
	i := 0
	for i < len(path) {
		if path[i] != '.' {
			return Path{}, fmt.Errorf("field path %q: expected '.' at position %d, found %q", path, i, path[i])
		}
		i++
		start := i
		for i < len(path) && isFieldChar(path[i], i == start) {
			i++
		}
		if i == start {
			if i < len(path) {
				return Path{}, fmt.Errorf("field path %q: invalid character %q at position %d (field names start with a letter or _ and contain letters, digits, _ and -)", path, path[i], i)
			}
			return Path{}, fmt.Errorf("field path %q ends with a dot: name a field after it", path)
		}
		seg := segment{field: path[start:i]}
		if strings.HasPrefix(path[i:], "[*]") {
			seg.each = true
			i += 3
		} else if i < len(path) && path[i] == '[' {
			return Path{}, fmt.Errorf("field path %q: only [*] may follow a field name (at position %d)", path, i)
		}
		p.segments = append(p.segments, seg)
	}
	return p, nil
}

// MustParse is Parse for paths known to be valid; it panics otherwise.
func MustParse(path string) Path {
	p, err := Parse(path)
	if err != nil {
		panic(err)
	}
	return p
}

func isFieldChar(c byte, first bool) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
		return true
	case c >= '0' && c <= '9', c == '-':
		return !first
	}
	return false
}

// String returns the path as written.
func (p Path) String() string { return p.raw }

// Values returns every string the path reaches in obj. Missing fields,
// non-string leaves and non-list values under [*] yield nothing.
func (p Path) Values(obj map[string]interface{}) []string {
	var out []string
	p.walk(obj, 0, func(s string) bool {
		out = append(out, s)
		return true
	})
	return out
}

// Matches reports whether the path reaches the string name in obj. It stops
// at the first match.
func (p Path) Matches(obj map[string]interface{}, name string) bool {
	found := false
	p.walk(obj, 0, func(s string) bool {
		found = s == name
		return !found
	})
	return found
}

// walk visits the strings reached from v at segment i; visit returns false
// to stop. It reports whether walking should go on.
func (p Path) walk(v interface{}, i int, visit func(string) bool) bool {
	if i == len(p.segments) {
		if s, ok := v.(string); ok {
			return visit(s)
		}
		return true
	}
	m, ok := v.(map[string]interface{})
	if !ok {
		return true
	}
	next, ok := m[p.segments[i].field]
	if !ok {
		return true
	}
	if !p.segments[i].each {
		return p.walk(next, i+1, visit)
	}
	list, ok := next.([]interface{})
	if !ok {
		return true
	}
	for _, el := range list {
		if !p.walk(el, i+1, visit) {
			return false
		}
	}
	return true
}
