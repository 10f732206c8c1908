package decision

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"golang.org/x/time/rate"
)

// workspaceTree serves the child Workspaces of each logical cluster, two a
// page, as the front-proxy lists them; forbidden clusters answer 403.
type workspaceTree struct {
	children  map[string][]string
	forbidden map[string]bool
	mu        sync.Mutex
	pages     int
}

func (w *workspaceTree) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if len(parts) != 6 || parts[0] != "clusters" || parts[2] != "apis" || parts[3] != "tenancy.kcp.io" || parts[5] != "workspaces" {
		http.NotFound(rw, r)
		return
	}
	cluster := parts[1]
	w.mu.Lock()
	w.pages++
	w.mu.Unlock()
	if w.forbidden[cluster] {
		writeStatus(rw, http.StatusForbidden, "Forbidden", "workspaces is forbidden")
		return
	}
	kids := w.children[cluster]
	start := 0
	if c := r.URL.Query().Get("continue"); c != "" {
		_ = json.Unmarshal([]byte(c), &start)
	}
	end := min(start+2, len(kids))
	cont := ""
	if end < len(kids) {
		b, _ := json.Marshal(end)
		cont = string(b)
	}
	var items []interface{}
	for _, k := range kids[start:end] {
		items = append(items, map[string]interface{}{"spec": map[string]interface{}{"cluster": k}})
	}
	writeJSON(rw, map[string]interface{}{"metadata": map[string]interface{}{"continue": cont}, "items": items})
}

// TestWorkspaceWalk: the walk visits root and every logical cluster below
// it once, across pages, leaves out what is no logical cluster name, goes
// on past a workspace whose children it may not list and says so, and
// never visits a cluster twice when the tree names one twice.
func TestWorkspaceWalk(t *testing.T) {
	tree := &workspaceTree{
		children: map[string][]string{
			"root": {"org", "team-a", "team-b", "not a cluster", ""},
			"org":  {"p1", "p2", "c1"},
			"p1":   {"org"},
		},
		forbidden: map[string]bool{"team-b": true},
	}
	walk := &WorkspaceWalk{Finder: serveFinder(t, tree), Root: "root", Limit: rate.NewLimiter(rate.Inf, 1)}
	var visited []string
	err := walk.Walk(context.Background(), func(c string) { visited = append(visited, c) })
	if err == nil || !strings.Contains(err.Error(), "1 workspaces could not be walked") || !strings.Contains(err.Error(), "team-b") {
		t.Errorf("err = %v, want the forbidden workspace named", err)
	}
	sort.Strings(visited)
	if want := []string{"c1", "org", "p1", "p2", "root", "team-a", "team-b"}; !slices.Equal(visited, want) {
		t.Errorf("visited %v, want %v", visited, want)
	}
	// root's five children take three pages, org's three two; the other
	// five clusters one each.
	if tree.pages != 10 {
		t.Errorf("read %d pages, want 10", tree.pages)
	}
}
