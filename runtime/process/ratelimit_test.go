package process

import (
	"flag"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

func TestRateLimitFlags(t *testing.T) {
	tests := []struct {
		args    []string
		want    RateLimit
		wantErr string
	}{
		{args: nil, want: DefaultRateLimit},
		{args: []string{"--kube-api-qps=200", "--kube-api-burst=400"}, want: RateLimit{QPS: 200, Burst: 400}},
		{args: []string{"--kube-api-qps=0.5"}, want: RateLimit{QPS: 0.5, Burst: DefaultRateLimit.Burst}},
		{args: []string{"--kube-api-qps=0"}, wantErr: "--kube-api-qps must be greater than 0"},
		{args: []string{"--kube-api-qps=-1"}, wantErr: "--kube-api-qps must be greater than 0"},
		{args: []string{"--kube-api-burst=0"}, wantErr: "--kube-api-burst must be at least 1"},
		{args: []string{"--kube-api-qps=fast"}, wantErr: "not a number"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(new(strings.Builder))
			var r RateLimit
			r.BindFlags(fs)
			err := fs.Parse(tt.args)
			if err == nil {
				err = r.Validate()
			}
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case r != tt.want:
				t.Fatalf("got %+v, want %+v", r, tt.want)
			}
		})
	}
}

func TestApplyRateLimit(t *testing.T) {
	ws, err := FromConfig(&rest.Config{Host: "https://kcp.example.com/clusters/root:depctrl"})
	if err != nil {
		t.Fatal(err)
	}
	ws.Apply(RateLimit{})
	if got := ws.ForCluster("abc"); got.QPS != DefaultRateLimit.QPS || got.Burst != DefaultRateLimit.Burst {
		t.Fatalf("zero value: a cluster's config has QPS %g burst %d, want the default %+v", got.QPS, got.Burst, DefaultRateLimit)
	}
	ws.Apply(RateLimit{QPS: 7, Burst: 9})
	for name, cfg := range map[string]*rest.Config{"workspace": ws.Config, "base": ws.Base, "cluster": ws.ForCluster("abc")} {
		if cfg.QPS != 7 || cfg.Burst != 9 {
			t.Errorf("%s config has QPS %g burst %d, want 7 and 9", name, cfg.QPS, cfg.Burst)
		}
	}
}
