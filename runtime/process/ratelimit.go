package process

import (
	"flag"
	"fmt"
	"strconv"

	"k8s.io/client-go/rest"
)

// RateLimit is the client-side limit on the runtime's requests to kcp.
type RateLimit struct {
	// QPS is the sustained rate, in requests a second.
	QPS float32
	// Burst is how many requests may go at once above it.
	Burst int
}

// DefaultRateLimit is well above client-go's own default (5 a second,
// bursts of 10), which throttled the controller where it matters: every
// rule's status is one write, so 1 000 rules created together took minutes
// to be reported indexed and enforced, however fast kcp answered. kcp's
// priority and fairness still protects the server from a runaway client.
var DefaultRateLimit = RateLimit{QPS: 50, Burst: 100}

// BindFlags registers --kube-api-qps and --kube-api-burst, defaulting to
// DefaultRateLimit.
func (r *RateLimit) BindFlags(fs *flag.FlagSet) {
	*r = DefaultRateLimit
	fs.Func("kube-api-qps", fmt.Sprintf("requests a second this process may send to kcp, sustained (default %g)", DefaultRateLimit.QPS), func(v string) error {
		q, err := strconv.ParseFloat(v, 32)
		if err != nil {
			return fmt.Errorf("not a number: %q", v)
		}
		r.QPS = float32(q)
		return nil
	})
	fs.IntVar(&r.Burst, "kube-api-burst", DefaultRateLimit.Burst, "requests this process may send to kcp at once above --kube-api-qps")
}

// Validate checks the limit; the zero value stands for DefaultRateLimit.
func (r RateLimit) Validate() error {
	if r == (RateLimit{}) {
		return nil
	}
	if r.QPS <= 0 {
		return fmt.Errorf("--kube-api-qps must be greater than 0, got %g", r.QPS)
	}
	if r.Burst < 1 {
		return fmt.Errorf("--kube-api-burst must be at least 1, got %d", r.Burst)
	}
	return nil
}

// Apply sets the limit on every config w hands out; the zero value applies
// DefaultRateLimit.
func (w *Workspace) Apply(r RateLimit) {
	if r == (RateLimit{}) {
		r = DefaultRateLimit
	}
	for _, cfg := range []*rest.Config{w.Config, w.Base} {
		cfg.QPS, cfg.Burst = r.QPS, r.Burst
	}
}
