package trust

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestBoundaryHasOneDoor reads the runtime's code and fails when a request
// value could reach a URL or a workspace choice past this package: the
// logical cluster annotation is read here only, every request to the
// front-proxy gets its path from frontproxy.Address, and "/clusters/" is
// joined by hand only where the cluster comes from the runtime's own
// configuration or from kcp.
func TestBoundaryHasOneDoor(t *testing.T) {
	// Where "/clusters/" may be joined, and why the name there is not a
	// request's.
	clustersJoined := map[string]string{
		"runtime/frontproxy/frontproxy.go":             "checks every segment",
		"runtime/decision/finder.go":                   "client checks the cluster with trust.Cluster first",
		"runtime/virtualworkspace/objectclient.go":     "clusters that the export's virtual workspace lists",
		"runtime/virtualworkspace/virtualworkspace.go": "clusters that the export's virtual workspace lists",
		"runtime/kcpconfig/kcpconfig.go":               "workspaces from the runtime's flags",
		"runtime/kcpconfig/selfcontained.go":           "workspaces from the runtime's flags",
		"runtime/process/process.go":                   "a flag's help text",
		"runtime/scope/scope.go":                       "the scope of the controller's own webhook URLs, which Parse checks strictly",
	}
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(filepath.Join(root, "runtime"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.SelectorExpr:
				switch x.Sel.Name {
				case "ClusterAnnotation":
					if !strings.HasPrefix(rel, "runtime/trust/") && !strings.HasPrefix(rel, "runtime/api/") {
						t.Errorf("%s: reads %s; the logical cluster of a request comes from trust.ClusterOf only", fset.Position(x.Pos()), x.Sel.Name)
					}
				case "AbsPath":
					if !strings.HasPrefix(rel, "runtime/frontproxy/") {
						t.Errorf("%s: sets a request path itself; build it with frontproxy.Path and Address.On", fset.Position(x.Pos()))
					}
				}
			case *ast.BasicLit:
				if x.Kind != token.STRING {
					return true
				}
				s, _ := strconv.Unquote(x.Value)
				if s == "kcp.io/cluster" && !strings.HasPrefix(rel, "runtime/api/") {
					t.Errorf("%s: names the logical cluster annotation; read it through trust.ClusterOf", fset.Position(x.Pos()))
				}
				if strings.Contains(s, "/clusters/") {
					if _, ok := clustersJoined[rel]; !ok {
						t.Errorf("%s: joins a /clusters/ path by hand; use frontproxy.Path, or list the file here with the reason its cluster is not a request's", fset.Position(x.Pos()))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
