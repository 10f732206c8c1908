package admission

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// clustersJoined lists the files where a /clusters/ path may be joined by
// hand, and why the name there is not a request's.
var clustersJoined = map[string]string{
	"runtime/admission/path.go":            "checks every segment",
	"runtime/process/objectclient.go":      "clusters that the export's virtual workspace lists",
	"runtime/process/virtualworkspaces.go": "clusters that the export's virtual workspace lists",
	"runtime/process/kcpconfig.go":         "workspaces from the runtime's flags",
	"runtime/process/selfcontained.go":     "workspaces from the runtime's flags",
	"runtime/process/process.go":           "a flag's help text",
	"runtime/admission/scope.go":           "the scope of the controller's own webhook URLs, which Parse checks strictly",
}

// clustersSegment matches a string that holds "clusters" as a URL path
// segment: "/clusters/", "/clusters", "clusters/", or the word alone.
var clustersSegment = regexp.MustCompile(`(^|/)clusters(/|$)`)

// doorsOpened returns where the file rel (a path from the repository's root)
// lets a request value reach a URL or a workspace choice past this package.
func doorsOpened(fset *token.FileSet, rel string, f *ast.File) []string {
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			switch x.Sel.Name {
			case "ClusterAnnotation":
				if rel != "runtime/admission/cluster.go" && !strings.HasPrefix(rel, "runtime/api/") {
					found = append(found, fset.Position(x.Pos()).String()+": reads ClusterAnnotation; the logical cluster of a request comes from admission.ClusterOf only")
				}
			case "AbsPath":
				if rel != "runtime/admission/path.go" {
					found = append(found, fset.Position(x.Pos()).String()+": sets a request path itself; build it with admission.Path and Address.On")
				}
			}
		case *ast.BasicLit:
			if x.Kind != token.STRING {
				return true
			}
			s, _ := strconv.Unquote(x.Value)
			if s == "kcp.io/cluster" && !strings.HasPrefix(rel, "runtime/api/") {
				found = append(found, fset.Position(x.Pos()).String()+": names the logical cluster annotation; read it through admission.ClusterOf")
			}
			if clustersSegment.MatchString(s) {
				if _, ok := clustersJoined[rel]; !ok {
					found = append(found, fset.Position(x.Pos()).String()+": joins a /clusters/ path by hand; use admission.Path, or list the file in clustersJoined with the reason its cluster is not a request's")
				}
			}
		}
		return true
	})
	return found
}

// TestDoorsOpened: the check below recognises each way past the boundary,
// and nothing that stays within it.
func TestDoorsOpened(t *testing.T) {
	tests := []struct {
		name, file, code string
		want             int
	}{
		{name: "a cluster joined onto the host, as a per-cluster client does", file: "runtime/decision/finder.go",
			code: `cfg.Host = strings.TrimSuffix(base.Host, "/") + "/clusters/" + cluster`, want: 1},
		{name: "a cluster joined as segments", file: "runtime/decision/skip.go",
			code: `p := path.Join("/clusters", cluster, "apis")`, want: 1},
		{name: "a cluster joined without the leading slash", file: "runtime/index/reindexer.go",
			code: `p := "clusters/" + cluster`, want: 1},
		{name: "a path formatted around the cluster", file: "runtime/decision/targets.go",
			code: `p := fmt.Sprintf("%s/clusters/%s", host, cluster)`, want: 1},
		{name: "a request path set directly", file: "runtime/decision/finder.go",
			code: `r := f.raw.Get().AbsPath(segments...)`, want: 1},
		{name: "the annotation read by its constant", file: "runtime/decision/validator.go",
			code: `c := meta.Annotations[v1alpha1.ClusterAnnotation]`, want: 1},
		{name: "the annotation read by its name", file: "runtime/index/recording.go",
			code: `c := meta.Annotations["kcp.io/cluster"]`, want: 1},
		{name: "a path from admission.Path", file: "runtime/decision/finder.go",
			code: `p, err := admission.Path(cluster, logicalClusters, "", "cluster"); r := p.On(f.raw.Get())`},
		{name: "logical clusters in a message, and the logicalclusters resource", file: "runtime/decision/finder.go",
			code: `msg := "the logical clusters of " + "logicalclusters"`},
		{name: "a file listed with its reason", file: "runtime/process/kcpconfig.go",
			code: `cfg.Host = strings.TrimSuffix(host, "/") + "/clusters/" + name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, tt.file, "package p\nfunc _() {\n"+tt.code+"\n}\n", 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := doorsOpened(fset, tt.file, f); len(got) != tt.want {
				t.Fatalf("found %d ways past the boundary, want %d: %q", len(got), tt.want, got)
			}
		})
	}
}

// TestBoundaryHasOneDoor reads the runtime's code and fails when a request
// value could reach a URL or a workspace choice past this package: the
// logical cluster annotation is read here only, every request to the
// front-proxy gets its path from admission.Address, and "/clusters/" is
// joined by hand only where the cluster comes from the runtime's own
// configuration or from kcp (clustersJoined).
func TestBoundaryHasOneDoor(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	var seen []string
	err := filepath.WalkDir(filepath.Join(root, "runtime"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		seen = append(seen, rel)
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		for _, door := range doorsOpened(fset, rel, f) {
			t.Error(door)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// An entry for a file that is gone, or moved, would let whatever
	// takes its place join paths unchecked.
	for file := range clustersJoined {
		if !slices.Contains(seen, file) {
			t.Errorf("clustersJoined lists %s, which does not exist", file)
		}
	}
}
