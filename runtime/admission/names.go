package admission

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Name checks that s can be the name of an object the rules protect or
// read: the kinds APIExports serve take DNS-1123 subdomains, as
// kube-apiserver requires of every custom resource.
func Name(s string) error {
	if errs := validation.IsDNS1123Subdomain(s); len(errs) > 0 {
		return fmt.Errorf("%q is not an object name: %s", s, strings.Join(errs, "; "))
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
