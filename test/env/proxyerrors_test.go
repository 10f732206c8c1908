package env

import (
	"os"
	"path/filepath"
	"testing"
)

func TestProxyErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lost := `E1129 20:01:49.755 1 metrics.go:166] "proxy error" err="http2: Transport: cannot retry err [http2: Transport received Server's graceful shutdown GOAWAY] after Request.Body was written"`
	canceled := `E1129 20:01:50.001 1 metrics.go:166] "proxy error" err="context canceled"`
	e := &Env{LogFiles: []string{
		write("kcp-front-proxy.log", "I1129 starting\n"+lost+"\n"+canceled+"\n"),
		write("kcp-0.log", `E1129 "proxy error" err="not the front-proxy"`+"\n"),
	}}
	for _, tc := range []struct {
		name  string
		env   *Env
		lines int
		want  string
	}{
		{"a lost request is reported, a canceled one and other logs are not", e, 5, lost},
		{"no log", &Env{}, 5, ""},
		{"at most the last lines", &Env{LogFiles: []string{write("other/kcp-front-proxy.log", lost+"\n"+lost+"x\n")}}, 1, lost + "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.env.ProxyErrors(tc.lines); got != tc.want {
				t.Errorf("ProxyErrors(%d) = %q, want %q", tc.lines, got, tc.want)
			}
		})
	}
}
