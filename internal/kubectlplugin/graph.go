package kubectlplugin

// The references of a workspace, as deletion protection sees them: every
// object of the types the workspace binds from APIExports, and for each the
// dependents its dry-run deletion names (blockers.Ask). refs draws it, order
// sorts it.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/depctrl/terraform-provider-depctrl/internal/blockers"
)

// Object names one object of the workspace. Objects are told apart by
// group, resource, namespace and name: a dependent's version is the one
// its rule names, which need not be the one it was listed in.
type Object struct {
	Group     string `json:"group"`
	Version   string `json:"version"`
	Resource  string `json:"resource"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// GenerateName is the prefix of a dependent being created without a
	// name (then Name is "").
	GenerateName string `json:"generateName,omitempty"`
}

// objectKey is what tells objects apart.
type objectKey struct {
	group, resource, namespace, name, generateName string
}

func (o Object) key() objectKey {
	return objectKey{o.Group, o.Resource, o.Namespace, o.Name, o.GenerateName}
}

// String is Kind.group/name, with the namespace in parentheses.
func (o Object) String() string {
	if o.Namespace == "" {
		return o.qualifiedKind() + "/" + o.displayName()
	}
	return o.qualifiedKind() + "/" + o.displayName() + " (" + o.Namespace + ")"
}

// qualifiedKind is Kind.group, or Kind for the core group.
func (o Object) qualifiedKind() string {
	if o.Group == "" {
		return o.Kind
	}
	return o.Kind + "." + o.Group
}

// displayName is the name, or prefix* for an object being created with a
// generated name.
func (o Object) displayName() string {
	if o.Name == "" {
		return o.GenerateName + "*"
	}
	return o.Name
}

func compareObjects(a, b Object) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Group, b.Group), cmp.Compare(a.Namespace, b.Namespace),
		cmp.Compare(a.Name, b.Name), cmp.Compare(a.GenerateName, b.GenerateName))
}

// Reference says that From references To, so that To cannot be deleted
// while From is there.
type Reference struct {
	From Object `json:"from"`
	To   Object `json:"to"`
	// Pending: From's write that references To is admitted and not stored
	// yet.
	Pending bool `json:"pending,omitempty"`
}

// Graph is the references among the objects of a workspace.
type Graph struct {
	// Objects are every object read, and every dependent a denial named,
	// sorted.
	Objects []Object `json:"objects"`
	// References are sorted by To, then From.
	References []Reference `json:"references"`
	// Unanswered are the objects protection could not be asked about,
	// or that more dependents reference than it lists, with why: their
	// dependents are missing from References, or some of them.
	Unanswered []Unanswered `json:"unanswered,omitempty"`
}

// Unanswered is an object whose dependents are unknown.
type Unanswered struct {
	Object Object `json:"object"`
	Error  string `json:"error"`
}

// apiType is a type whose objects the graph reads.
type apiType struct {
	resource   schema.GroupVersionResource
	kind       string
	namespaced bool
}

// workspace is what building a graph reads.
type workspace interface {
	// types are the types the workspace binds from APIExports.
	types(ctx context.Context) ([]apiType, error)
	// list returns the objects of t in namespace ("" for all).
	list(ctx context.Context, t apiType, namespace string) ([]Object, error)
	// ask asks protection what blocks the deletion of o.
	ask(ctx context.Context, o Object) (blockers.Verdict, error)
}

// asksAtOnce bounds the dry-run deletions in flight.
const asksAtOnce = 8

// buildGraph reads the objects of every bound type in namespace ("" for
// every namespace; cluster-scoped objects are always read) and asks about
// each.
func buildGraph(ctx context.Context, ws workspace, namespace string) (*Graph, error) {
	types, err := ws.types(ctx)
	if err != nil {
		return nil, err
	}
	var objects []Object
	for _, t := range types {
		ns := namespace
		if !t.namespaced {
			ns = ""
		}
		listed, err := ws.list(ctx, t, ns)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", t.resource.GroupResource(), err)
		}
		objects = append(objects, listed...)
	}
	g := &Graph{}
	gone := map[objectKey]bool{}
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, asksAtOnce)
	)
	for _, o := range objects {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			v, err := ws.ask(ctx, o)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case apierrors.IsNotFound(err):
				// Deleted since it was listed: nothing to draw.
				gone[o.key()] = true
				return
			case err != nil:
				g.Unanswered = append(g.Unanswered, Unanswered{Object: o, Error: err.Error()})
				return
			}
			for _, b := range v.Blockers {
				g.References = append(g.References, Reference{From: objectOf(b), To: o, Pending: b.Pending})
			}
			if v.More != 0 {
				more := "an unknown number of"
				if v.More > 0 {
					more = strconv.Itoa(v.More)
				}
				g.Unanswered = append(g.Unanswered, Unanswered{Object: o, Error: more + " more dependents reference it than protection lists"})
			}
		}()
	}
	wg.Wait()
	g.Objects = slices.DeleteFunc(objects, func(o Object) bool { return gone[o.key()] })
	g.normalize()
	return g, nil
}

// objectOf is the dependent b names.
func objectOf(b blockers.Blocker) Object {
	return Object{Group: b.Group, Version: b.Version, Resource: b.Resource, Kind: b.Kind, Namespace: b.Namespace, Name: b.Name, GenerateName: b.GenerateName}
}

// normalize adds every object a reference names to Objects, keeps one reference
// from each object to each (stored, when it was named stored once), and
// sorts everything.
func (g *Graph) normalize() {
	type edge struct{ from, to objectKey }
	at := map[edge]int{}
	refs := g.References[:0]
	for _, r := range g.References {
		e := edge{r.From.key(), r.To.key()}
		if i, ok := at[e]; ok {
			refs[i].Pending = refs[i].Pending && r.Pending
			continue
		}
		at[e] = len(refs)
		refs = append(refs, r)
	}
	g.References = refs
	known := map[objectKey]bool{}
	for _, o := range g.Objects {
		known[o.key()] = true
	}
	for _, r := range g.References {
		for _, o := range []Object{r.From, r.To} {
			if !known[o.key()] {
				known[o.key()] = true
				g.Objects = append(g.Objects, o)
			}
		}
	}
	slices.SortFunc(g.Objects, compareObjects)
	slices.SortFunc(g.References, func(a, b Reference) int {
		return cmp.Or(compareObjects(a.To, b.To), compareObjects(a.From, b.From))
	})
	sort.Slice(g.Unanswered, func(i, j int) bool { return compareObjects(g.Unanswered[i].Object, g.Unanswered[j].Object) < 0 })
}

// dependents maps each object to the objects that reference it.
func (g *Graph) dependents() map[objectKey][]Reference {
	out := map[objectKey][]Reference{}
	for _, r := range g.References {
		out[r.To.key()] = append(out[r.To.key()], r)
	}
	return out
}

// unansweredError says which objects could not be asked about.
func (g *Graph) unansweredError() error {
	if len(g.Unanswered) == 0 {
		return nil
	}
	lines := make([]string, len(g.Unanswered))
	for i, u := range g.Unanswered {
		lines[i] = "  " + u.Object.String() + ": " + u.Error
	}
	return fmt.Errorf("the references of %d objects are incomplete:\n%s", len(g.Unanswered), strings.Join(lines, "\n"))
}
