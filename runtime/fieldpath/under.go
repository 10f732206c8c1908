package fieldpath

// Under reports whether p reads the field at fields (a path of field names
// from the object's root, such as status, or spec and replicas) or
// something inside it: whatever is written there may change what p finds.
// [*] does not matter: a list at fields or inside it is written with it.
func (p Path) Under(fields ...string) bool {
	if len(fields) == 0 || len(p.segments) < len(fields) {
		return false
	}
	for i, f := range fields {
		if p.segments[i].field != f {
			return false
		}
	}
	return true
}
