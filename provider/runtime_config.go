package provider

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/depctrl/terraform-provider-depctrl/internal/certs"
	"github.com/depctrl/terraform-provider-depctrl/internal/deploy"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
)

// Defaults of depctrl_runtime that are not the renderer's.
const (
	defaultCertificateValidity = "8760h"
	defaultCertificateRenewal  = "720h"
	// The CA outlives many serving certificates, so that renewing one never
	// changes what kcp trusts.
	caValidityFactor = 10
)

// componentModel is the part of depctrl_runtime's controller and webhook
// blocks that both share.
type componentModel struct {
	KubeconfigPath types.String `tfsdk:"kubeconfig_path"`
	Kubeconfig     types.String `tfsdk:"kubeconfig"`
	Context        types.String `tfsdk:"context"`
	Replicas       types.Int64  `tfsdk:"replicas"`
	ExtraArgs      types.List   `tfsdk:"extra_args"`
	CPURequest     types.String `tfsdk:"cpu_request"`
	MemoryRequest  types.String `tfsdk:"memory_request"`
	CPULimit       types.String `tfsdk:"cpu_limit"`
	MemoryLimit    types.String `tfsdk:"memory_limit"`
}

// runtimeComponentModel is a component block of depctrl_runtime: the
// shared part and the write-only kubeconfig, which Terraform never stores
// (it is null in every plan and state; the provider reads it from the
// configuration, where it is known during plan and apply).
type runtimeComponentModel struct {
	componentModel
	KubeconfigWO        types.String `tfsdk:"kubeconfig_wo"`
	KubeconfigWOVersion types.Int64  `tfsdk:"kubeconfig_wo_version"`
}

// webhookSettings are the webhook block's inputs that depctrl_runtime and
// depctrl_runtime_manifests share as they are.
type webhookSettings struct {
	Port                 types.Int64  `tfsdk:"port"`
	URL                  types.String `tfsdk:"url"`
	TLSSecretName        types.String `tfsdk:"tls_secret_name"`
	SkipProtectionGroups types.List   `tfsdk:"skip_protection_groups"`
	DeferredDeletion     types.Bool   `tfsdk:"deferred_deletion"`
}

// webhookModel is depctrl_runtime's webhook block: it generates the
// serving certificate, for the names extra_sans adds, and renews it.
type webhookModel struct {
	runtimeComponentModel
	webhookSettings
	ExtraSANs              types.List   `tfsdk:"extra_sans"`
	CertificateValidity    types.String `tfsdk:"certificate_validity"`
	CertificateRenewBefore types.String `tfsdk:"certificate_renew_before"`
}

// runtimeSettings are the top-level inputs depctrl_runtime and
// depctrl_runtime_manifests share as they are; their component blocks
// differ (the data source has no write-only attributes).
type runtimeSettings struct {
	Namespace       types.String `tfsdk:"namespace"`
	CreateNamespace types.Bool   `tfsdk:"create_namespace"`
	Name            types.String `tfsdk:"name"`
	Image           types.String `tfsdk:"image"`
	ImageTag        types.String `tfsdk:"image_tag"`
	ImagePullPolicy types.String `tfsdk:"image_pull_policy"`
	APIExportName   types.String `tfsdk:"api_export_name"`
	WorkspacePath   types.String `tfsdk:"workspace_path"`
	SettleObjects   types.Bool   `tfsdk:"settle_objects"`
}

// runtimeInputs is what depctrl_runtime and depctrl_runtime_manifests have
// in common: everything the renderer needs except the TLS material.
type runtimeInputs struct {
	runtimeSettings
	Controller *runtimeComponentModel `tfsdk:"controller"`
	Webhook    *webhookModel          `tfsdk:"webhook"`
	// NetworkPolicy is an object, not a model, since a configuration may
	// make it unknown as a whole (a conditional); it is null in a state
	// from before the attribute existed.
	NetworkPolicy types.Object `tfsdk:"network_policy"`
}

// known reports whether every input is known, so that the objects can be
// rendered during plan.
func (in *runtimeInputs) known() bool {
	if in.Controller == nil || in.Webhook == nil {
		return false
	}
	vals := []unknowable{in.WorkspacePath, in.Namespace, in.CreateNamespace, in.Name, in.Image, in.ImageTag, in.ImagePullPolicy, in.APIExportName,
		in.Webhook.Port, in.Webhook.URL, in.Webhook.SkipProtectionGroups, in.Webhook.DeferredDeletion, in.SettleObjects, in.Webhook.ExtraSANs, in.Webhook.TLSSecretName, in.Webhook.CertificateValidity, in.Webhook.CertificateRenewBefore}
	for _, c := range []*runtimeComponentModel{in.Controller, &in.Webhook.runtimeComponentModel} {
		vals = append(vals, c.KubeconfigPath, c.Kubeconfig, c.KubeconfigWO, c.Context, c.Replicas, c.ExtraArgs, c.CPURequest, c.MemoryRequest, c.CPULimit, c.MemoryLimit)
	}
	if in.NetworkPolicy.IsUnknown() {
		return false
	}
	if p, _ := networkPolicyOf(context.Background(), in.NetworkPolicy); p != nil {
		vals = append(vals, p.values()...)
	}
	return !anyUnknown(vals...)
}

// withWriteOnly returns a copy of the inputs to render from: each
// component's kubeconfig_wo, read from config (the write-only value is null
// in the plan), becomes its inline kubeconfig. The copy is never stored.
func (in runtimeInputs) withWriteOnly(config *runtimeInputs) runtimeInputs {
	if config == nil {
		return in
	}
	if in.Controller != nil && config.Controller != nil && !config.Controller.KubeconfigWO.IsNull() {
		c := *in.Controller
		c.Kubeconfig, c.KubeconfigWO = config.Controller.KubeconfigWO, config.Controller.KubeconfigWO
		in.Controller = &c
	}
	if in.Webhook != nil && config.Webhook != nil && !config.Webhook.KubeconfigWO.IsNull() {
		w := *in.Webhook
		w.Kubeconfig, w.KubeconfigWO = config.Webhook.KubeconfigWO, config.Webhook.KubeconfigWO
		in.Webhook = &w
	}
	return in
}

// deployConfig turns the inputs into the renderer's configuration, reading
// and embedding the kubeconfigs. TLS is left for the caller.
func (in *runtimeInputs) deployConfig(ctx context.Context) (deploy.Config, diag.Diagnostics) {
	var diags diag.Diagnostics
	cfg := deploy.Config{
		Namespace:       in.Namespace.ValueString(),
		CreateNamespace: in.CreateNamespace.ValueBool(),
		Name:            in.Name.ValueString(),
		Image:           in.Image.ValueString(),
		Tag:             in.ImageTag.ValueString(),
		ImagePullPolicy: in.ImagePullPolicy.ValueString(),
		APIExportName:   in.APIExportName.ValueString(),
		WebhookPort:     int32(in.Webhook.Port.ValueInt64()), //nolint:gosec // validated range
		WebhookURL:      in.Webhook.URL.ValueString(),
		TLS:             deploy.TLS{SecretName: in.Webhook.TLSSecretName.ValueString()},
		SettleObjects:   in.SettleObjects.ValueBool(),
		// Null (a data source that leaves it out, or a state written
		// before the attribute existed) is off, as the webhook's default.
		DeferredDeletion: in.Webhook.DeferredDeletion.ValueBool(),
	}
	var d diag.Diagnostics
	diags.Append(in.Webhook.SkipProtectionGroups.ElementsAs(ctx, &cfg.SkipProtectionGroups, false)...)
	ws := in.WorkspacePath.ValueString()
	cfg.Controller, d = in.Controller.component(ctx, path.Root("controller"), ws, in.Controller.inlineAttribute())
	diags.Append(d...)
	cfg.Webhook, d = in.Webhook.component(ctx, path.Root("webhook"), ws, in.Webhook.inlineAttribute())
	diags.Append(d...)
	policy, d := networkPolicyOf(ctx, in.NetworkPolicy)
	diags.Append(d...)
	cfg.NetworkPolicy, d = policy.withDefaults().deploy(ctx)
	diags.Append(d...)
	return cfg.WithDefaults(), diags
}

// inlineAttribute names the attribute an inline kubeconfig came from.
func (c *runtimeComponentModel) inlineAttribute() string {
	if !c.KubeconfigWO.IsNull() {
		return "kubeconfig_wo"
	}
	return "kubeconfig"
}

// component renders the component; inline names the attribute its inline
// kubeconfig, if any, came from, for errors.
func (c *componentModel) component(ctx context.Context, at path.Path, workspace, inline string) (deploy.Component, diag.Diagnostics) {
	var diags diag.Diagnostics
	var args []string
	diags.Append(c.ExtraArgs.ElementsAs(ctx, &args, false)...)
	kubeconfig, err := c.kubeconfig(workspace)
	if err != nil {
		attr := inline
		if c.KubeconfigPath.ValueString() != "" {
			attr = "kubeconfig_path"
		}
		diags.AddAttributeError(at.AtName(attr), "Unusable kcp kubeconfig", at.AtName(attr).String()+": "+err.Error())
	}
	return deploy.Component{
		Replicas:   int32(c.Replicas.ValueInt64()), //nolint:gosec // validated range
		Kubeconfig: kubeconfig,
		ExtraArgs:  args,
		Resources: deploy.Resources{
			CPURequest:    c.CPURequest.ValueString(),
			MemoryRequest: c.MemoryRequest.ValueString(),
			CPULimit:      c.CPULimit.ValueString(),
			MemoryLimit:   c.MemoryLimit.ValueString(),
		},
	}, diags
}

// kubeconfig reads the component's kubeconfig and makes it self-contained
// (a pod has none of the files a local kubeconfig may point at), pointed at
// workspace when that is set.
func (c *componentModel) kubeconfig(workspace string) ([]byte, error) {
	raw, dir := []byte(c.Kubeconfig.ValueString()), ""
	if p := c.KubeconfigPath.ValueString(); p != "" {
		data, err := readFile(p)
		if err != nil {
			return nil, err
		}
		// Paths in the kubeconfig are relative to its directory.
		expanded, _ := expandHome(p)
		raw, dir = data, filepath.Dir(expanded)
	}
	out, err := process.SelfContained(raw, dir, c.Context.ValueString(), workspace)
	if err != nil {
		return nil, fmt.Errorf("%w. The runtime needs a kubeconfig whose server is the dep-ctrl workspace through the front-proxy; or set workspace_path", err)
	}
	return out, nil
}

// servingHosts are the names the generated serving certificate covers: the
// Service's cluster DNS names, the host of webhook.url, and extra_sans.
func (in *runtimeInputs) servingHosts(ctx context.Context, cfg deploy.Config) []string {
	hosts := cfg.ServiceHosts()
	if u, err := url.Parse(cfg.WebhookURL); err == nil && cfg.WebhookURL != "" {
		hosts = append(hosts, u.Hostname())
	}
	var extra []string
	_ = in.Webhook.ExtraSANs.ElementsAs(ctx, &extra, false)
	hosts = append(hosts, extra...)
	slices.Sort(hosts)
	return slices.Compact(hosts)
}

// tlsMaterial is the generated TLS state. It lives in the cluster only (the
// webhook's TLS Secret and the issuer Secret), never in Terraform state.
type tlsMaterial struct {
	// CABundle is what kcp trusts: the current CA, followed by the previous
	// one while webhook pods may still serve certificates it signed.
	CABundle string `json:"caBundle"`
	CACert   string `json:"caCert"`
	// CAKey is empty when the issuer Secret is gone; the next renewal then
	// starts a new CA.
	CAKey string `json:"caKey,omitempty"`
	Cert  string `json:"cert"`
	Key   string `json:"key"`
}

// renewal says what of the TLS material a plan replaces.
type renewal struct{ serving, ca bool }

func (r renewal) any() bool { return r.serving || r.ca }

// planRenewal decides, from the material in state, whether the serving
// certificate (hosts changed, or within renewBefore of expiry) or the CA
// (too close to expiry to sign a full-length certificate) must be replaced.
func planRenewal(prior *tlsMaterial, hosts []string, validity, renewBefore time.Duration, now time.Time) renewal {
	if prior == nil || prior.Cert == "" {
		return renewal{serving: true, ca: true}
	}
	if caNotAfter, err := certs.NotAfter([]byte(prior.CACert)); err != nil || caNotAfter.Before(now.Add(validity)) {
		return renewal{serving: true, ca: true}
	}
	serving := false
	if notAfter, err := certs.NotAfter([]byte(prior.Cert)); err != nil || notAfter.Sub(now) < renewBefore {
		serving = true
	}
	have, err := certs.Hosts([]byte(prior.Cert))
	slices.Sort(have)
	if err != nil || !slices.Equal(have, hosts) {
		serving = true
	}
	// Without the CA key (its Secret deleted) a new certificate needs a new CA.
	return renewal{serving: serving, ca: serving && prior.CAKey == ""}
}

// issue carries out a renewal. A new CA is bundled with the previous one
// (while that is still valid), so kcp keeps trusting webhook pods that
// still serve the old certificate during the rollout. And the new serving
// certificate comes with the new CA cross-signed by the previous one (when
// its key is known), so kcp trusts the new pods too before the controller
// has written the new bundle into every webhook configuration: a CA
// replacement then refuses no request at all.
func (r renewal) issue(prior *tlsMaterial, commonName string, hosts []string, validity time.Duration, now time.Time) (*tlsMaterial, error) {
	if !r.any() {
		return prior, nil
	}
	out := &tlsMaterial{}
	if prior != nil {
		*out = *prior
	}
	var cross []byte
	if r.ca {
		caCert, caKey, err := certs.NewCA(commonName+"-ca", caValidityFactor*validity)
		if err != nil {
			return nil, err
		}
		out.CABundle = string(caCert)
		if prior != nil && prior.CACert != "" {
			if na, err := certs.NotAfter([]byte(prior.CACert)); err == nil && na.After(now) {
				out.CABundle += strings.TrimSpace(prior.CACert) + "\n"
				if prior.CAKey != "" {
					if cross, err = certs.CrossSign(caCert, []byte(prior.CACert), []byte(prior.CAKey)); err != nil {
						return nil, err
					}
				}
			}
		}
		out.CACert, out.CAKey = string(caCert), string(caKey)
	}
	b, err := certs.IssueServing([]byte(out.CACert), []byte(out.CAKey), commonName, hosts, validity)
	if err != nil {
		return nil, err
	}
	// The leaf first: what reads the certificate (expiry, hosts) reads it.
	out.Cert, out.Key = string(b.ServerCert)+string(cross), string(b.ServerKey)
	return out, nil
}

// withTLS completes cfg with generated material.
func withTLS(cfg deploy.Config, m *tlsMaterial) deploy.Config {
	cfg.TLS.CACert = []byte(m.CABundle)
	cfg.TLS.Cert = []byte(m.Cert)
	cfg.TLS.Key = []byte(m.Key)
	if m.CAKey != "" {
		cfg.TLS.IssuerCert, cfg.TLS.IssuerKey = []byte(m.CACert), []byte(m.CAKey)
	}
	return cfg
}

// durations parses the certificate settings (validated at plan).
func (w *webhookModel) durations() (validity, renewBefore time.Duration, err error) {
	validity, err = time.ParseDuration(w.CertificateValidity.ValueString())
	if err != nil {
		return 0, 0, fmt.Errorf("webhook.certificate_validity: %w", err)
	}
	renewBefore, err = time.ParseDuration(w.CertificateRenewBefore.ValueString())
	if err != nil {
		return 0, 0, fmt.Errorf("webhook.certificate_renew_before: %w", err)
	}
	return validity, renewBefore, nil
}
