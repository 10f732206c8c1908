package settle

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var objectsSettled = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "depctrl_webhook_objects_settled_total",
	Help: "Protected objects proven unreferenced and labelled settled: their deletions skip the webhook until a write references them or their rules change.",
})

var workspacesWalked = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "depctrl_webhook_settle_workspaces_walked_total",
	Help: "Logical clusters reached by the walks that find the places of protected objects to settle, one walk each time the stamp of a protected type becomes usable.",
})

func init() {
	metrics.Registry.MustRegister(objectsSettled, workspacesWalked)
}
