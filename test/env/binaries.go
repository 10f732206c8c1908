package env

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// BinDirVariable overrides where the kcp binaries are looked up.
const BinDirVariable = "DEPCTRL_BIN_DIR"

const modulePath = "github.com/depctrl/terraform-provider-depctrl"

// RepoRoot finds the repository root by walking up from the working
// directory to the go.mod of this module.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module "+modulePath+"\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s above the working directory", modulePath)
		}
		dir = parent
	}
}

// BinDir is where `make kcp` and `make kube` put their binaries.
func BinDir() (string, error) {
	if d := os.Getenv(BinDirVariable); d != "" {
		return filepath.Abs(d)
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin"), nil
}

// binary returns the path of a built binary, or an error that says how to
// build it.
func binary(name, makeTarget string) (string, error) {
	dir, err := BinDir()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	if fi, err := os.Stat(p); err != nil || fi.IsDir() {
		return "", fmt.Errorf("%s not found in %s: run `make %s` first (or set %s)", name, dir, makeTarget, BinDirVariable)
	}
	return p, nil
}
