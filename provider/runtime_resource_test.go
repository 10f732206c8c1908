package provider

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/depctrl/terraform-provider-depctrl/internal/deploy"
	"github.com/depctrl/terraform-provider-depctrl/test/check"
	"github.com/depctrl/terraform-provider-depctrl/test/env"
	"github.com/depctrl/terraform-provider-depctrl/test/fixtures"
	"github.com/depctrl/terraform-provider-depctrl/test/podrunner"
	"github.com/depctrl/terraform-provider-depctrl/test/runtimetest"
)

// TestAccRuntimeResource_basic deploys the runtime with depctrl_runtime into a real
// kube-apiserver, runs what was deployed (test/podrunner plays the kubelet)
// and checks that deletes are blocked through kcp on every shard. Then it
// updates the image tag and replicas (adding disruption budgets), narrows
// the NetworkPolicies, issues new certificates, imports, detects and repairs
// drift (of the budgets and policies too), turns the policies off and
// destroys.
func TestAccRuntimeResource_basic(t *testing.T) {
	e := accEnv(t, env.TwoShards)
	kube := env.KubeForTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()

	// Working directories (and so state files) under a directory of ours,
	// so that noSecretsInState can read them.
	tfDir := t.TempDir()
	t.Setenv("TF_ACC_TEMP_DIR", tfDir)
	prefix := env.UniqueName("rt")
	ns := prefix
	tp := topology{
		e: e, prefix: prefix,
		providerExtra: fmt.Sprintf("  kubernetes {\n    kubeconfig_path = %q\n  }\n", kube.Kubeconfig),
		bindingsAfter: "depctrl_runtime.this",
	}
	dir := t.TempDir()
	kubeconfigs := map[string]string{}
	for _, user := range []string{env.ControllerUser, env.WebhookUser} {
		id, err := e.Identity(user)
		check.Must(t, err)
		// Issued for the front-proxy in general; workspace_path points
		// them at the dep-ctrl workspace.
		kc, err := e.IdentityKubeconfig(id, "root")
		check.Must(t, err)
		kubeconfigs[user] = filepath.Join(dir, user+".kubeconfig")
		check.Must(t, os.WriteFile(kubeconfigs[user], kc, 0o600))
	}
	importID := fmt.Sprintf("%s/depctrl,workspace_path=%s,controller.kubeconfig_path=%s,webhook.kubeconfig_path=%s,"+
		"webhook.certificate_validity=1h,webhook.certificate_renew_before=30m", ns, tp.path("depctrl"), kubeconfigs[env.ControllerUser], kubeconfigs[env.WebhookUser])
	webhookIP := podrunner.PodIP(ns, deploy.DefaultName+"-webhook", 0)
	// replicas is both components'; with two or more each gets a
	// PodDisruptionBudget. kcp calls the first webhook replica only.
	runtimeHCL := func(tag string, replicas int, webhook string, top ...string) string {
		return fmt.Sprintf(`
resource "depctrl_runtime" "this" {
  namespace      = %q
  image_tag      = %q
  workspace_path = depctrl_export.this.workspace_path
%s
  controller = {
    kubeconfig_path = %q
    replicas        = %d
  }

  webhook = {
    kubeconfig_path = %q
    replicas        = %d
    url             = "https://%s:9443/validate"
%s
  }

  depends_on = [depctrl_root_rbac.this, depctrl_shard.s0, depctrl_shard.s1]
}
`, ns, tag, strings.Join(top, "\n"), kubeconfigs[env.ControllerUser], replicas, kubeconfigs[env.WebhookUser], replicas, webhookIP, webhook)
	}
	config := func(tag string, replicas int, webhook string, top ...string) string {
		return tp.withRules(".spec.vpcRef.name", runtimeHCL(tag, replicas, webhook, top...))
	}
	// narrowed admits kcp's shards by address and namespace, and metrics
	// from the monitoring namespace only.
	// (and settling off, not the default, read back by the import below).
	narrowed := `  settle_objects = false
  network_policy = {
    webhook_cidrs      = ["127.0.0.0/8"]
    webhook_namespaces = ["kcp"]
    metrics_namespaces = ["monitoring"]
  }`

	// webhookSettings are the webhook's settings when the runtime is
	// imported.
	webhookSettings := `    extra_sans = ["depctrl.example.com"]
    certificate_validity     = "1h"
    certificate_renew_before = "30m"
    skip_protection_groups   = ["platform-admins"]`

	kcfg, err := kube.Config()
	check.Must(t, err)
	kc, err := kubernetes.NewForConfig(kcfg)
	check.Must(t, err)
	runner := &podrunner.Runner{
		Client: kc, Namespace: ns, BinDir: runtimetest.Binaries(t), Dir: filepath.Join(dir, "pods"),
		Logf: t.Logf,
	}
	runCtx, stopRunner := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); runner.Run(runCtx, 500*time.Millisecond) }()
	t.Cleanup(func() { stopRunner(); <-done })

	consumers := []string{tp.path("consumer-0"), tp.path("consumer-1")}
	fixturesFor := func() { tp.applyFixtures(ctx, t, consumers) }
	// protected checks, on every shard, that the deployed runtime refuses
	// to delete a referenced VPC and allows it once the VM is gone.
	protected := func(*terraform.State) error {
		for _, c := range consumers {
			vm := fmt.Sprintf("vm-%d", time.Now().UnixNano())
			if err := tp.expectProtected(ctx, t, c, vm); err != nil {
				return err
			}
			check.Must(t, adminDynamic(t, e, c).Resource(fixtures.VirtualMachines.GVR()).Namespace("apps").Delete(ctx, vm, metav1.DeleteOptions{}))
		}
		return nil
	}
	image := func(name string) string {
		d, err := kc.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		check.Must(t, err)
		return d.Spec.Template.Spec.Containers[0].Image
	}
	rt := "depctrl_runtime.this"
	// budgets checks that each component has a budget letting a drain
	// evict one pod at a time when it runs replicas >= 2, and none below.
	budgets := func(replicas int) error {
		for _, name := range []string{"depctrl-controller", "depctrl-webhook"} {
			b, err := kc.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{})
			switch {
			case replicas < 2 && apierrors.IsNotFound(err):
			case replicas < 2:
				return fmt.Errorf("PodDisruptionBudget %s for one replica (err=%v)", name, err)
			case err != nil:
				return fmt.Errorf("reading PodDisruptionBudget %s: %w", name, err)
			case b.Spec.MaxUnavailable == nil || b.Spec.MaxUnavailable.IntValue() != 1 || b.Spec.Selector.MatchLabels[deploy.ComponentLabel] != strings.TrimPrefix(name, "depctrl-"):
				return fmt.Errorf("PodDisruptionBudget %s: %+v", name, b.Spec)
			}
		}
		return nil
	}
	// admits checks the peers a live NetworkPolicy admits to a port.
	admits := func(policy, port string, want ...string) error {
		p, err := kc.NetworkingV1().NetworkPolicies(ns).Get(ctx, policy, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading NetworkPolicy %s: %w", policy, err)
		}
		var got []string
		for _, rule := range p.Spec.Ingress {
			if !slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool { return p.Port != nil && p.Port.String() == port }) {
				continue
			}
			for _, peer := range rule.From {
				switch {
				case peer.IPBlock != nil:
					got = append(got, peer.IPBlock.CIDR)
				case peer.NamespaceSelector != nil && len(peer.NamespaceSelector.MatchExpressions) == 0:
					got = append(got, "ns:*")
				case peer.NamespaceSelector != nil:
					for _, v := range peer.NamespaceSelector.MatchExpressions[0].Values {
						got = append(got, "ns:"+v)
					}
				}
			}
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("NetworkPolicy %s admits %v to port %s, want %v", policy, got, port, want)
		}
		return nil
	}
	sameCA := statecheck.CompareValue(compare.ValuesSame())
	newCert := statecheck.CompareValue(compare.ValuesDiffer())

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy: func(*terraform.State) error {
			for _, name := range []string{"depctrl-controller", "depctrl-webhook"} {
				if _, err := kc.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("Deployment %s left behind (err=%v)", name, err)
				}
			}
			for _, name := range []string{"depctrl-webhook-tls", "depctrl-controller-kubeconfig", "depctrl-webhook-kubeconfig"} {
				if _, err := kc.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("Secret %s left behind (err=%v)", name, err)
				}
			}
			for _, name := range []string{"depctrl-controller", "depctrl-webhook"} {
				if _, err := kc.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("PodDisruptionBudget %s left behind (err=%v)", name, err)
				}
			}
			return nil
		},
		Steps: slices.Concat([]resource.TestStep{
			{
				// The kcp side and the runtime, which rolls out once the
				// export and the RBAC it needs exist.
				Config: tp.base() + runtimeHCL("v1.0.0", 1, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(rt, tfjsonpath.New("id"), knownvalue.StringExact(ns+"/depctrl")),
					statecheck.ExpectKnownValue(rt, tfjsonpath.New("webhook_url"), knownvalue.StringExact("https://"+webhookIP+":9443/validate")),
					statecheck.ExpectKnownValue(rt, tfjsonpath.New("ca_bundle"), knownvalue.StringRegexp(regexp.MustCompile(`^-----BEGIN CERTIFICATE-----`))),
					// 11 objects, and a NetworkPolicy per component; no
					// disruption budget for one replica.
					statecheck.ExpectKnownValue(rt, tfjsonpath.New("objects"), knownvalue.MapSizeExact(13)),
					statecheck.ExpectKnownValue(rt, tfjsonpath.New("network_policy").AtMapKey("webhook_namespaces"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("*")})),
					statecheck.ExpectKnownValue(rt, tfjsonpath.New("objects").AtMapKey("Deployment/depctrl-webhook"), knownvalue.StringRegexp(regexp.MustCompile(`^sha256:`))),
					sameCA.AddStateValue(rt, tfjsonpath.New("ca_bundle")),
					newCert.AddStateValue(rt, tfjsonpath.New("certificate_not_after")),
				},
				Check: func(*terraform.State) error {
					d, err := kc.AppsV1().Deployments(ns).Get(ctx, "depctrl-webhook", metav1.GetOptions{})
					if err != nil {
						return err
					}
					if sc := d.Spec.Template.Spec.Containers[0].SecurityContext; sc == nil || !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem {
						return fmt.Errorf("the webhook container is not non-root with a read-only root filesystem: %+v", sc)
					}
					if got := image("depctrl-controller"); got != deploy.DefaultImage+":v1.0.0" {
						return fmt.Errorf("controller image %q", got)
					}
					if err := budgets(0); err != nil {
						return err
					}
					return admits("depctrl-webhook", "https", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "fc00::/7", "ns:*")
				},
			},
			{
				// Rules, enforced by what Terraform deployed, on every shard.
				PreConfig: fixturesFor,
				Config:    config("v1.0.0", 1, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("depctrl_dependency_rule.vm_needs_vpc", tfjsonpath.New("ready"), knownvalue.Bool(true)),
				},
				Check: protected,
			},
			{
				// A new image tag and a second replica of each component
				// roll the pods in place and add a disruption budget per
				// component; protection holds.
				Config: config("v1.0.1", 2, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(rt, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(rt, tfjsonpath.New("objects"), knownvalue.MapSizeExact(15)),
				},
				Check: resource.ComposeTestCheckFunc(protected, noSecretsInState(tfDir), func(*terraform.State) error {
					if got := image("depctrl-webhook"); got != deploy.DefaultImage+":v1.0.1" {
						return fmt.Errorf("webhook image %q", got)
					}
					return budgets(2)
				}),
			},
			{
				// Another SAN issues a new serving certificate from the same
				// CA, so kcp's trust is unchanged.
				Config: config("v1.0.1", 2, `    extra_sans = ["depctrl.example.com"]
    certificate_validity     = "1h"
    certificate_renew_before = "30m"
    skip_protection_groups   = ["platform-admins"]`, narrowed),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(rt, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(rt, tfjsonpath.New("certificate_not_after")),
					plancheck.ExpectKnownValue(rt, tfjsonpath.New("ca_bundle"), knownvalue.StringRegexp(regexp.MustCompile(`CERTIFICATE`))),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					sameCA.AddStateValue(rt, tfjsonpath.New("ca_bundle")),
					newCert.AddStateValue(rt, tfjsonpath.New("certificate_not_after")),
				},
				// The narrowed policy is read back from the cluster.
				Check: resource.ComposeTestCheckFunc(protected,
					func(*terraform.State) error { return admits("depctrl-webhook", "https", "127.0.0.0/8", "ns:kcp") },
					func(*terraform.State) error { return admits("depctrl-webhook", "metrics", "ns:monitoring") },
					func(*terraform.State) error { return admits("depctrl-controller", "metrics", "ns:monitoring") }),
			},
			{
				// Within certificate_renew_before of expiry, a plan renews.
				// Every later plan renews again with this setting, hence
				// the non-empty plan after apply.
				Config: config("v1.0.1", 2, `    extra_sans = ["depctrl.example.com"]
    certificate_validity     = "1h"
    certificate_renew_before = "59m59s"
    skip_protection_groups   = ["platform-admins"]`, narrowed),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(rt, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(rt, tfjsonpath.New("certificate_not_after")),
				}},
				ExpectNonEmptyPlan: true,
				Check:              protected,
			},
			{
				Config: config("v1.0.1", 2, `    extra_sans = ["depctrl.example.com"]
    certificate_validity     = "1h"
    certificate_renew_before = "30m"
    skip_protection_groups   = ["platform-admins"]`, narrowed),
				ConfigStateChecks: []statecheck.StateCheck{sameCA.AddStateValue(rt, tfjsonpath.New("ca_bundle"))},
			},
			// Import reads the kubeconfigs' content, not where it came
			// from, and cannot know the certificate policy: the import
			// ID says them.
			importVerified(rt, importID),
			importPlansNothing(rt, importID),
			{
				// Deferred deletion on: the webhook rolls with the flag,
				// rendered after the skip-protection groups.
				Config: config("v1.0.1", 2, webhookSettings+"\n    deferred_deletion        = true", narrowed),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(rt, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(rt, tfjsonpath.New("webhook").AtMapKey("deferred_deletion"), knownvalue.Bool(true)),
				},
				Check: resource.ComposeTestCheckFunc(webhookArgs(ctx, kc, ns, "--skip-protection-groups=platform-admins", "--deferred-deletion=true"), protected),
			},
			// Import reads it back from the webhook's arguments.
			importVerified(rt, importID),
			importPlansNothing(rt, importID),
			{
				// Off again (the default): the flag is not rendered at all.
				Config: config("v1.0.1", 2, webhookSettings, narrowed),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(rt, tfjsonpath.New("webhook").AtMapKey("deferred_deletion"), knownvalue.Bool(false)),
				},
				Check: resource.ComposeTestCheckFunc(webhookArgs(ctx, kc, ns, "--skip-protection-groups=platform-admins"), protected),
			},
			importPlansNothing(rt, importID),
		}, identitySteps(t,
			// The identity names the runtime by its namespace and name; what
			// the cluster does not record is not part of it.
			expectIdentity(config("v1.0.1", 2, webhookSettings, narrowed), rt, map[string]knownvalue.Check{
				"namespace":                        knownvalue.StringExact(ns),
				"name":                             knownvalue.StringExact(deploy.DefaultName),
				"workspace_path":                   knownvalue.Null(),
				"controller_kubeconfig_path":       knownvalue.Null(),
				"controller_context":               knownvalue.Null(),
				"webhook_kubeconfig_path":          knownvalue.Null(),
				"webhook_context":                  knownvalue.Null(),
				"webhook_certificate_validity":     knownvalue.Null(),
				"webhook_certificate_renew_before": knownvalue.Null(),
			}),
			// An import block adds it, as the import ID does.
			importByIdentityBlockPlansNothing(rt, config("v1.0.1", 2, webhookSettings, narrowed), map[string]string{
				"namespace":                        ns,
				"workspace_path":                   tp.path("depctrl"),
				"controller_kubeconfig_path":       kubeconfigs[env.ControllerUser],
				"webhook_kubeconfig_path":          kubeconfigs[env.WebhookUser],
				"webhook_certificate_validity":     "1h",
				"webhook_certificate_renew_before": "30m",
			}),
		), []resource.TestStep{
			{
				// Without them, the kubeconfigs are read from the Secrets
				// and the certificate policy is the default.
				ResourceName:      rt,
				ImportState:       true,
				ImportStateId:     ns + "/depctrl",
				ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"workspace_path", "controller.kubeconfig_path", "controller.kubeconfig", "webhook.kubeconfig_path", "webhook.kubeconfig",
					"webhook.certificate_validity", "webhook.certificate_renew_before", "timeouts"},
			},
			{
				// Drift of the new objects: a refresh reports the deleted
				// NetworkPolicy and the loosened budget.
				PreConfig: func() {
					check.Must(t, kc.NetworkingV1().NetworkPolicies(ns).Delete(ctx, "depctrl-webhook", metav1.DeleteOptions{}))
					_, err := kc.PolicyV1().PodDisruptionBudgets(ns).Patch(ctx, "depctrl-webhook", types.MergePatchType, []byte(`{"spec":{"maxUnavailable":2}}`), metav1.PatchOptions{})
					check.Must(t, err)
				},
				RefreshState:       true,
				ExpectNonEmptyPlan: true,
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr(rt, "objects.NetworkPolicy/depctrl-webhook", objectMissing),
					resource.TestCheckResourceAttr(rt, "objects.PodDisruptionBudget/depctrl-webhook", objectChanged),
					resource.TestCheckResourceAttrWith(rt, "objects.NetworkPolicy/depctrl-controller", func(v string) error {
						if !strings.HasPrefix(v, "sha256:") {
							return fmt.Errorf("the untouched controller policy reads %q", v)
						}
						return nil
					}),
				),
			},
			{
				// Drift: the Service is deleted and the webhook scaled by
				// hand too; the plan shows it and apply repairs all of it.
				PreConfig: func() {
					check.Must(t, kc.CoreV1().Services(ns).Delete(ctx, "depctrl-webhook", metav1.DeleteOptions{}))
					_, err := kc.AppsV1().Deployments(ns).Patch(ctx, "depctrl-webhook", types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{})
					check.Must(t, err)
				},
				Config: config("v1.0.1", 2, `    extra_sans = ["depctrl.example.com"]
    certificate_validity     = "1h"
    certificate_renew_before = "30m"
    skip_protection_groups   = ["platform-admins"]`, narrowed),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(rt, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(func(*terraform.State) error {
					if _, err := kc.CoreV1().Services(ns).Get(ctx, "depctrl-webhook", metav1.GetOptions{}); err != nil {
						return fmt.Errorf("the Service was not restored: %v", err)
					}
					if err := budgets(2); err != nil {
						return err
					}
					return admits("depctrl-webhook", "https", "127.0.0.0/8", "ns:kcp")
				}, protected),
			},
			{
				// The policies turned off: both are deleted, nothing else
				// changes, protection holds.
				Config: config("v1.0.1", 2, `    extra_sans = ["depctrl.example.com"]
    certificate_validity     = "1h"
    certificate_renew_before = "30m"
    skip_protection_groups   = ["platform-admins"]`, `  network_policy = { enabled = false }`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(rt, tfjsonpath.New("objects"), knownvalue.MapSizeExact(13)),
				},
				Check: resource.ComposeTestCheckFunc(func(*terraform.State) error {
					for _, name := range []string{"depctrl-webhook", "depctrl-controller"} {
						if _, err := kc.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
							return fmt.Errorf("NetworkPolicy %s left behind after enabled = false (err=%v)", name, err)
						}
					}
					return nil
				}, protected),
			},
			{
				// The same kubeconfigs, write-only: the objects do not
				// change (so neither do the pods), and the state holds
				// neither the kubeconfigs nor their keys.
				Config: writeOnlyKubeconfigs(config("v1.0.1", 2, `    extra_sans = ["depctrl.example.com"]
    certificate_validity     = "1h"
    certificate_renew_before = "30m"
    skip_protection_groups   = ["platform-admins"]`, `  network_policy = { enabled = false }`), 1, kubeconfigs[env.ControllerUser], kubeconfigs[env.WebhookUser]),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(rt, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(rt, tfjsonpath.New("objects"), knownvalue.NotNull()),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(rt, tfjsonpath.New("controller").AtMapKey("kubeconfig_wo"), knownvalue.Null()),
					statecheck.ExpectKnownValue(rt, tfjsonpath.New("controller").AtMapKey("kubeconfig"), knownvalue.Null()),
					statecheck.ExpectKnownValue(rt, tfjsonpath.New("webhook").AtMapKey("kubeconfig_wo"), knownvalue.Null()),
					statecheck.ExpectKnownValue(rt, tfjsonpath.New("webhook").AtMapKey("kubeconfig_wo_version"), knownvalue.Int64Exact(1)),
				},
				Check: resource.ComposeTestCheckFunc(noSecretsInState(tfDir), protected),
			},
			{
				// A new version applies the kubeconfigs again.
				Config: writeOnlyKubeconfigs(config("v1.0.1", 2, `    extra_sans = ["depctrl.example.com"]
    certificate_validity     = "1h"
    certificate_renew_before = "30m"
    skip_protection_groups   = ["platform-admins"]`, `  network_policy = { enabled = false }`), 2, kubeconfigs[env.ControllerUser], kubeconfigs[env.WebhookUser]),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(rt, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(rt, tfjsonpath.New("controller").AtMapKey("kubeconfig_wo_version"), knownvalue.Int64Exact(2)),
				},
				Check: resource.ComposeTestCheckFunc(noSecretsInState(tfDir), protected),
			},
		}),
	})
}

// webhookArgs checks that the deployed webhook's arguments after the ones
// every configuration renders (up to --settle-objects) are want, in order,
// and that no other argument sets a flag of want's.
func webhookArgs(ctx context.Context, kc kubernetes.Interface, ns string, want ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		d, err := kc.AppsV1().Deployments(ns).Get(ctx, "depctrl-webhook", metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading the webhook Deployment: %w", err)
		}
		args := d.Spec.Template.Spec.Containers[0].Args
		i := slices.IndexFunc(args, func(a string) bool { return strings.HasPrefix(a, "--settle-objects=") })
		if i < 0 || len(args) < i+1+len(want) || !slices.Equal(args[i+1:i+1+len(want)], want) {
			return fmt.Errorf("webhook arguments %q: want %q after --settle-objects", args, want)
		}
		for _, a := range args[i+1+len(want):] {
			if strings.HasPrefix(a, "--deferred-deletion=") || strings.HasPrefix(a, "--skip-protection-groups=") {
				return fmt.Errorf("webhook arguments %q: %s besides %q", args, a, want)
			}
		}
		return nil
	}
}

// writeOnlyKubeconfigs turns the kubeconfig_path attributes in config that
// name one of paths into kubeconfig_wo with the file's content, at the
// given version.
func writeOnlyKubeconfigs(config string, version int, paths ...string) string {
	for _, p := range paths {
		re := regexp.MustCompile(`(?m)^(\s*)kubeconfig_path = ` + regexp.QuoteMeta(fmt.Sprintf("%q", p)) + `$`)
		config = re.ReplaceAllString(config, fmt.Sprintf("${1}kubeconfig_wo         = file(%q)\n${1}kubeconfig_wo_version = %d", p, version))
	}
	return config
}

// noSecretsInState reads every state file under dir, private state
// included, and fails if it holds a private key or client credentials:
// those stay in the cluster.
func noSecretsInState(dir string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		found := 0
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || filepath.Base(p) != "terraform.tfstate" {
				return err
			}
			found++
			raw, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			var st struct {
				Resources []struct {
					Type      string `json:"type"`
					Instances []struct {
						Private string `json:"private"`
					} `json:"instances"`
				} `json:"resources"`
			}
			if err := json.Unmarshal(raw, &st); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			texts := []string{string(raw)}
			for _, r := range st.Resources {
				for _, in := range r.Instances {
					if in.Private == "" {
						continue
					}
					dec, err := base64.StdEncoding.DecodeString(in.Private)
					if err != nil {
						return fmt.Errorf("%s: private state of %s: %w", p, r.Type, err)
					}
					texts = append(texts, string(dec))
				}
			}
			for _, text := range texts {
				for _, secret := range []string{"PRIVATE KEY", "client-key-data", "LS0tLS1CRUdJTi"} {
					if strings.Contains(text, secret) {
						return fmt.Errorf("%s holds %q", p, secret)
					}
				}
			}
			return nil
		})
		if err == nil && found == 0 {
			err = fmt.Errorf("no state file under %s", dir)
		}
		return err
	}
}
