package provider

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/depctrl/terraform-provider-depctrl/runtime/admission"
	"github.com/depctrl/terraform-provider-depctrl/runtime/api/v1alpha1"
)

// ruleFootprint is what the controller installs for one rule, and so what
// it must remove once the rule is gone:
//
//   - in the rule's own workspace, the reference index configuration
//     (the MutatingWebhookConfiguration) covers writes of the dependent
//     type;
//   - in the workspace of each dependency's export, the deletion webhook of
//     the ValidatingWebhookConfiguration covers deletes of the protected
//     type, with a URL that names the logical cluster of the rule's
//     workspace among those whose rules it serves (admission.Scope).
//
// Another rule in the same workspace with the same dependent, or the same
// dependency, keeps the entry it shares; rules elsewhere name other
// clusters in the URL, so they never make this rule's entry look present.
type ruleFootprint struct {
	name string
	// workspace is the rule's workspace path, cluster its logical cluster.
	workspace, cluster string
	dependent          schema.GroupVersionResource
	protects           []protectedType
}

// protectedType is one dependency: the protected type and the workspace
// of its export, where its deletion webhook lives.
type protectedType struct {
	workspace string
	gvr       schema.GroupVersionResource
}

func footprintOf(workspace string, rule *v1alpha1.DependencyRule) ruleFootprint {
	fp := ruleFootprint{
		name:      rule.Name,
		workspace: workspace,
		cluster:   rule.Annotations[v1alpha1.ClusterAnnotation],
		dependent: rule.DependentGVR(),
	}
	for _, d := range rule.Spec.Dependencies {
		p := protectedType{workspace: d.APIExportRef.Path, gvr: d.GVR()}
		if !slices.Contains(fp.protects, p) {
			fp.protects = append(fp.protects, p)
		}
	}
	return fp
}

// remaining lists what the controller installed for the rule and has not
// removed yet, each as a phrase for a message; empty once it is all gone.
// A workspace that no longer exists holds nothing.
func (fp ruleFootprint) remaining(ctx context.Context, conn *Connection) ([]string, error) {
	rules, err := conn.Dynamic(fp.workspace)
	if err != nil {
		return nil, err
	}
	others, err := listRules(ctx, rules)
	if workspaceGone(ctx, conn, fp.workspace, err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var left []string
	if !slices.ContainsFunc(others, func(r v1alpha1.DependencyRule) bool {
		return r.Name != fp.name && r.DependentGVR() == fp.dependent
	}) {
		var index admissionregistrationv1.MutatingWebhookConfiguration
		found, err := getConfiguration(ctx, rules, webhookConfigurationGVRs[1], &index)
		if err != nil {
			return nil, fmt.Errorf("in %s: %w", fp.workspace, err)
		}
		if found && slices.ContainsFunc(index.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool { return covers(w.Rules, fp.dependent, "") }) {
			left = append(left, fmt.Sprintf("the reference index entry for %s in mutatingwebhookconfigurations/%s in %s",
				fp.dependent.GroupResource(), v1alpha1.WebhookConfigurationName, fp.workspace))
		}
	}
	if fp.cluster == "" {
		// Without the rule's logical cluster its deletion webhooks cannot
		// be told from other rules'.
		return left, nil
	}
	for _, p := range fp.protects {
		if slices.ContainsFunc(others, func(r v1alpha1.DependencyRule) bool {
			return r.Name != fp.name && slices.ContainsFunc(r.Spec.Dependencies, func(d v1alpha1.Dependency) bool {
				return d.APIExportRef.Path == p.workspace && d.GVR() == p.gvr
			})
		}) {
			continue
		}
		client, err := conn.Dynamic(p.workspace)
		if err != nil {
			return nil, err
		}
		var cfg admissionregistrationv1.ValidatingWebhookConfiguration
		found, err := getConfiguration(ctx, client, webhookConfigurationGVRs[0], &cfg)
		if workspaceGone(ctx, conn, p.workspace, err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("in %s: %w", p.workspace, err)
		}
		if found && slices.ContainsFunc(cfg.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
			return covers(w.Rules, p.gvr, admissionregistrationv1.Delete) && servesCluster(w.ClientConfig, fp.cluster)
		}) {
			left = append(left, fmt.Sprintf("the deletion webhook for %s in validatingwebhookconfigurations/%s in %s",
				p.gvr.GroupResource(), v1alpha1.WebhookConfigurationName, p.workspace))
		}
	}
	return left, nil
}

func listRules(ctx context.Context, client dynamic.Interface) ([]v1alpha1.DependencyRule, error) {
	list, err := client.Resource(v1alpha1.GroupVersionResource).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		// The workspace no longer serves rules: none is left.
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing DependencyRules: %w", err)
	}
	out := make([]v1alpha1.DependencyRule, 0, len(list.Items))
	for _, u := range list.Items {
		var r v1alpha1.DependencyRule
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
			return nil, fmt.Errorf("decoding DependencyRule %s: %w", u.GetName(), err)
		}
		out = append(out, r)
	}
	return out, nil
}

// getConfiguration reads the controller's configuration of kind gvr in the
// workspace of client; found is false when there is none, or when the
// object of that name is not the controller's.
func getConfiguration(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, into metav1.Object) (bool, error) {
	u, err := client.Resource(gvr).Get(ctx, v1alpha1.WebhookConfigurationName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading %s/%s: %w", gvr.Resource, v1alpha1.WebhookConfigurationName, err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return false, fmt.Errorf("decoding %s/%s: %w", gvr.Resource, v1alpha1.WebhookConfigurationName, err)
	}
	return into.GetLabels()[v1alpha1.ManagedByLabel] == v1alpha1.WebhookConfigurationManager, nil
}

// covers reports whether rules send requests for gvr to the webhook, for
// operation op ("" for any).
func covers(rules []admissionregistrationv1.RuleWithOperations, gvr schema.GroupVersionResource, op admissionregistrationv1.OperationType) bool {
	for _, r := range rules {
		if op != "" && !slices.Contains(r.Operations, op) && !slices.Contains(r.Operations, admissionregistrationv1.OperationAll) {
			continue
		}
		if slices.Contains(r.APIGroups, gvr.Group) && slices.Contains(r.APIVersions, gvr.Version) && slices.Contains(r.Resources, gvr.Resource) {
			return true
		}
	}
	return false
}

// servesCluster reports whether the webhook's URL names cluster among the
// logical clusters whose rules it decides for. A URL that names none
// (more rules than a URL names) cannot be told apart: it counts as
// someone else's.
func servesCluster(cc admissionregistrationv1.WebhookClientConfig, cluster string) bool {
	if cc.URL == nil {
		return false
	}
	u, err := url.Parse(*cc.URL)
	if err != nil {
		return false
	}
	sc, err := admission.Parse(u.Path)
	return err == nil && sc.Named && slices.Contains(sc.Clusters, cluster)
}

// waitForCleanup waits until the controller has removed what it installed
// for the rule, or timeout passes, and returns what is still there then.
// err is set when it could not look: at once for refused credentials or
// permissions, which waiting does not cure, otherwise with the last
// failure when the time is up.
func (fp ruleFootprint) waitForCleanup(ctx context.Context, timeout time.Duration, conn *Connection) (left []string, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	looked := false
	for {
		l, err := fp.remaining(ctx, conn)
		switch {
		case err == nil && len(l) == 0:
			return nil, nil
		case err == nil:
			left, looked = l, true
		case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
			return left, err
		}
		select {
		case <-ctx.Done():
			if !looked {
				return nil, err
			}
			return left, nil
		case <-time.After(pollInterval):
		}
	}
}
