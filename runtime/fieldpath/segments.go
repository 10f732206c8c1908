package fieldpath

// Segment is one step of a path: a field, and whether the path looks at
// every element of the list that field holds ([*]).
type Segment struct {
	Field string
	Each  bool
}

// Segments returns the path's steps in order. The slice is a copy.
func (p Path) Segments() []Segment {
	out := make([]Segment, len(p.segments))
	for i, s := range p.segments {
		out[i] = Segment{Field: s.field, Each: s.each}
	}
	return out
}
