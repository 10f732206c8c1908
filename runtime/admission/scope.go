package admission

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// MaxClusters bounds how many logical clusters one URL names; a
// configuration whose requests depend on more names none.
const MaxClusters = 32

// segment introduces the clusters in a URL path.
const segment = "/clusters/"

// Scope is the logical clusters whose rules can matter to the requests sent
// to one webhook URL.
type Scope struct {
	// Named says the URL named the clusters; when false any rule, in any
	// workspace on any shard, may matter.
	Named bool
	// Clusters are sorted and distinct.
	Clusters []string
}

// Unnamed is the scope of a URL that names no clusters.
var Unnamed = Scope{}

// Of returns the scope naming clusters, or Unnamed when they are more than
// MaxClusters.
func Of(clusters ...string) Scope {
	c := slices.Clone(clusters)
	slices.Sort(c)
	c = slices.Compact(c)
	if len(c) > MaxClusters {
		return Unnamed
	}
	return Scope{Named: true, Clusters: c}
}

// URL is endpoint with the scope's clusters appended; endpoint itself when
// the scope names none.
func (s Scope) URL(endpoint string) string {
	if !s.Named {
		return endpoint
	}
	return strings.TrimSuffix(endpoint, "/") + segment + strings.Join(s.Clusters, ",")
}

// Endpoint strips the scope from a URL that URL built.
func Endpoint(url string) string {
	if i := strings.LastIndex(url, segment); i >= 0 {
		return url[:i]
	}
	return url
}

// clusterName is what kcp allows as a logical cluster name.
var clusterName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Parse reads the scope from a request's URL path. A path without the
// clusters segment names none; a malformed list is an error.
func Parse(path string) (Scope, error) {
	i := strings.LastIndex(path, segment)
	if i < 0 {
		return Unnamed, nil
	}
	list := path[i+len(segment):]
	if list == "" {
		return Unnamed, fmt.Errorf("the URL path %q names no logical cluster after %q", path, segment)
	}
	clusters := strings.Split(list, ",")
	for _, c := range clusters {
		if !clusterName.MatchString(c) {
			return Unnamed, fmt.Errorf("the URL path %q names %q, which is not a logical cluster name", path, c)
		}
	}
	if len(clusters) > MaxClusters {
		return Unnamed, fmt.Errorf("the URL path %q names %d logical clusters, more than %d", path, len(clusters), MaxClusters)
	}
	return Of(clusters...), nil
}

// String is how the scope appears in messages.
func (s Scope) String() string {
	if !s.Named {
		return "every workspace"
	}
	return "logical cluster(s) " + strings.Join(s.Clusters, ", ")
}

type scopeKey struct{}

// withScope returns ctx carrying the scope of the request's URL.
func withScope(ctx context.Context, sc Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, sc)
}

// ScopeOf is the scope of the request being decided: Unnamed unless the
// request's URL named one.
func ScopeOf(ctx context.Context) Scope {
	sc, _ := ctx.Value(scopeKey{}).(Scope)
	return sc
}
