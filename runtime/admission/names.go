package admission

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Name checks that s can be the name of an object the rules protect or
// read: one URL path segment (Segment). kube-apiserver asks a DNS-1123
// subdomain of a custom resource's name, but kcp serves the types of an
// APIResourceSchema that says `nameValidation: PathSegmentName` with any
// name that is one path segment ("VPC_1", "a,b=c"), and a stricter check
// here would leave their objects unprotected: a reference to one would be
// taken for no reference at all. A name is never more than a segment of
// a path the webhook builds (Path) or a value it hashes (index labels); a
// selector that carries one escapes it.
func Name(s string) error {
	if err := Segment(s); err != nil {
		return fmt.Errorf("not an object name: %w", err)
	}
	return nil
}

// Namespace checks that s is a namespace's name (a DNS-1123 label).
func Namespace(s string) error {
	if errs := validation.IsDNS1123Label(s); len(errs) > 0 {
		return fmt.Errorf("%q is not a namespace name: %s", s, strings.Join(errs, "; "))
	}
	return nil
}

// Segment checks that s is one segment of a URL path that stays one: not
// empty, not "." or "..", without "/" or "%". Names, namespaces, groups,
// versions and resources pass through it before they become a path.
func Segment(s string) error {
	if s == "" {
		return fmt.Errorf("an empty path segment")
	}
	if errs := content.IsPathSegmentName(s); len(errs) > 0 {
		return fmt.Errorf("%q cannot be a path segment: %s", s, strings.Join(errs, "; "))
	}
	return nil
}
