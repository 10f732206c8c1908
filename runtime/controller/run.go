package controller

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/kcp-dev/logicalcluster/v3"
	tenancyv1alpha1 "github.com/kcp-dev/sdk/apis/tenancy/v1alpha1"
	kcpclientset "github.com/kcp-dev/sdk/client/clientset/versioned/cluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// Run runs the controller until ctx ends.
func Run(ctx context.Context, o Options, log logr.Logger) error {
	if err := o.Validate(); err != nil {
		return err
	}
	bundle := &caBundle{path: o.CABundleFile}
	if _, err := bundle.read(); err != nil {
		return err
	}
	ws, mgr, err := o.Connect(manager.Options{
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        leaderElectionID,
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		// The process exits as soon as the manager stops, so handing the
		// lease back at once is safe, and a rolling update or a stopped
		// leader does not leave rules unattended until the lease expires.
		LeaderElectionReleaseOnCancel: true,
	}, log)
	if err != nil {
		return err
	}

	kcp, err := kcpclientset.NewForConfig(ws.Base)
	if err != nil {
		return err
	}
	res := NewResolver(workspaceGetter{kcp}, o.ResolverTTL)
	vw, err := process.NewVirtualWorkspaces(ws.Config, o.ExportName)
	if err != nil {
		return err
	}
	mutateURL := o.MutateURL()
	syncer := NewSyncer(vw, func(ctx context.Context, path string) (string, error) {
		c, err := res.Resolve(ctx, path)
		return c.String(), err
	}, func() WebhookSettings {
		ca, _ := bundle.read()
		return WebhookSettings{ConfigurationName: v1alpha1.WebhookConfigurationName, URL: o.WebhookURL, MutateURL: mutateURL, CABundle: ca, TimeoutSeconds: o.WebhookTimeoutSeconds,
			Settle: o.Settle}
	}, log.WithName("sync"))
	if o.ResyncPeriod > 0 {
		syncer.Period = o.ResyncPeriod
	}
	syncer.Propagation = o.WebhookPropagation
	var otherLeads func(context.Context) (bool, error)
	if o.LeaderElect {
		kube, err := kubernetes.NewForConfig(ws.Config)
		if err != nil {
			return fmt.Errorf("building the lease client: %w", err)
		}
		otherLeads = LeaseHeld(kube, o.LeaderElectionNamespace, leaderElectionID, time.Now)
	}
	if err := mgr.AddReadyzCheck("configurations", syncer.ReadyCheck(otherLeads)); err != nil {
		return err
	}
	// The APIExport provider follows the export's endpoint slice and
	// builds the cache of each shard what a run reads lives in; it runs
	// on the elected replica only, as the reconciler does.
	shards, err := process.NewShards(vw, mgr.GetScheme(), log.WithName("provider").V(1))
	if err != nil {
		return err
	}
	if err := syncer.Follow(shards); err != nil {
		return err
	}
	if err := syncer.SetupWithManager(mgr); err != nil {
		return err
	}
	mc, err := mcmanager.WithMultiCluster(mgr, shards.Provider)
	if err != nil {
		return fmt.Errorf("adding the APIExport provider to the manager: %w", err)
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		bundle.watch(ctx, syncer.Trigger, log)
		return nil
	})); err != nil {
		return err
	}

	log.Info("starting controller", "workspace", ws.Path, "export", o.ExportName, "webhookURL", o.WebhookURL, "webhookMutateURL", mutateURL)
	return mc.Start(ctx)
}

// leaderElectionID names the controller's leader election lease.
const leaderElectionID = "depctrl-controller"

type workspaceGetter struct{ kcp kcpclientset.ClusterInterface }

func (g workspaceGetter) GetWorkspace(ctx context.Context, parent logicalcluster.Path, name string) (*tenancyv1alpha1.Workspace, error) {
	return g.kcp.Cluster(parent).TenancyV1alpha1().Workspaces().Get(ctx, name, metav1.GetOptions{})
}

// caBundle re-reads the webhook CA bundle file so a rotated CA reaches the
// webhook configurations without a restart.
type caBundle struct {
	path string
	mu   sync.Mutex
	data []byte
}

func (b *caBundle) read() ([]byte, error) {
	data, err := os.ReadFile(b.path)
	if err != nil {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.data != nil {
			return b.data, nil // keep the last good bundle through a transient error
		}
		return nil, fmt.Errorf("reading webhook CA bundle %q: %w", b.path, err)
	}
	if !bytes.Contains(data, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, fmt.Errorf("webhook CA bundle %q holds no PEM certificate", b.path)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.data = data
	return data, nil
}

func (b *caBundle) watch(ctx context.Context, changed func(), log logr.Logger) {
	last, _ := b.read()
	process.Every(ctx, 5*time.Second, func() {
		cur, err := b.read()
		if err != nil {
			log.Error(err, "re-reading the webhook CA bundle")
			return
		}
		if !bytes.Equal(cur, last) {
			log.Info("webhook CA bundle changed; updating webhook configurations", "file", b.path)
			last = cur
			changed()
		}
	})
}
