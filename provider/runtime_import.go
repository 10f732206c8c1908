package provider

import (
	"context"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/identityschema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/depctrl/terraform-provider-depctrl/internal/certs"
	"github.com/depctrl/terraform-provider-depctrl/internal/deploy"
	"github.com/depctrl/terraform-provider-depctrl/runtime/controller"
	"github.com/depctrl/terraform-provider-depctrl/runtime/process"
	"github.com/depctrl/terraform-provider-depctrl/runtime/webhook"
)

// importRuntime reconstructs the configuration of a deployed runtime from
// its Deployments and Secrets, and what was applied from that. found is
// false when there is no runtime of that name.
func (r *runtimeResource) importRuntime(ctx context.Context, kube kubernetes.Interface, m *runtimeModel, priv *privateState) (found bool, err error) {
	ns, name := m.Namespace.ValueString(), m.Name.ValueString()
	base := deploy.Config{Namespace: ns, Name: name}
	get := func(n string) (*appsv1.Deployment, error) {
		return kube.AppsV1().Deployments(ns).Get(ctx, n, metav1.GetOptions{})
	}
	ctrl, err := get(base.ControllerName())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading Deployment %s/%s: %w", ns, base.ControllerName(), err)
	}
	hook, err := get(base.WebhookName())
	if err != nil {
		return false, fmt.Errorf("reading Deployment %s/%s: %w", ns, base.WebhookName(), err)
	}
	cc, err := onlyContainer(ctrl)
	if err != nil {
		return false, err
	}
	wc, err := onlyContainer(hook)
	if err != nil {
		return false, err
	}

	// What the import ID said (ImportState): the cluster cannot tell.
	givenWorkspace, givenController, givenWebhook := m.WorkspacePath, m.Controller, m.Webhook

	image, tag := splitImage(cc.Image)
	args, err := readRuntimeArgs(cc.Args, wc.Args)
	if err != nil {
		return false, fmt.Errorf("reading the arguments of Deployments %s/%s and %s: %w", ns, base.ControllerName(), base.WebhookName(), err)
	}
	ctrlOpts, hookOpts, ctrlExtra, hookExtra := args.controller, args.webhook, args.controllerExtra, args.webhookExtra
	port := int64(deploy.DefaultWebhookPort)
	for _, p := range wc.Ports {
		if p.Name == "https" {
			port = int64(p.ContainerPort)
		}
	}

	m.ID = types.StringValue(ns + "/" + name)
	// A namespace this resource created carries its instance label.
	n, err := kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	m.CreateNamespace = types.BoolValue(err == nil && n.Labels[deploy.InstanceLabel] == name)
	m.Image, m.ImageTag = types.StringValue(image), types.StringValue(tag)
	m.ImagePullPolicy = types.StringValue(string(cc.ImagePullPolicy))
	m.APIExportName = types.StringValue(ctrlOpts.ExportName)
	// The kubeconfigs in the Secrets already name the workspace; an
	// import ID that names it points kubeconfigs read from files at it.
	m.WorkspacePath = types.StringNull()
	if !givenWorkspace.IsNull() && !givenWorkspace.IsUnknown() {
		m.WorkspacePath = givenWorkspace
	}
	m.WaitForRollout = types.BoolValue(true)
	m.Timeouts = timeouts.Value{Object: types.ObjectNull(map[string]attr.Type{"create": types.StringType, "update": types.StringType, "delete": types.StringType})}

	kubeconfig := func(component string) (types.String, error) {
		s, err := kube.CoreV1().Secrets(ns).Get(ctx, name+"-"+component+"-kubeconfig", metav1.GetOptions{})
		if err != nil {
			return types.StringNull(), fmt.Errorf("reading the %s kubeconfig Secret: %w", component, err)
		}
		return types.StringValue(string(s.Data[deploy.KubeconfigKey])), nil
	}
	m.Controller = &runtimeComponentModel{componentModel: *componentFrom(ctrl, cc, ctrlExtra)}
	if m.Controller.Kubeconfig, err = kubeconfig("controller"); err != nil {
		return false, err
	}
	m.Webhook = &webhookModel{runtimeComponentModel: runtimeComponentModel{componentModel: *componentFrom(hook, wc, hookExtra)}}
	if m.Webhook.Kubeconfig, err = kubeconfig("webhook"); err != nil {
		return false, err
	}
	m.Webhook.Port = types.Int64Value(port)
	m.Webhook.SkipProtectionGroups = types.ListNull(types.StringType)
	if g := hookOpts.SkipProtectionGroups; len(g) > 0 {
		var groups []attr.Value
		for _, name := range g {
			groups = append(groups, types.StringValue(name))
		}
		m.Webhook.SkipProtectionGroups = types.ListValueMust(types.StringType, groups)
	}
	m.Webhook.DeferredDeletion = types.BoolValue(hookOpts.DeferredDeletion)
	m.SettleObjects = types.BoolValue(hookOpts.Settle)
	m.Webhook.CertificateValidity = types.StringValue(defaultCertificateValidity)
	m.Webhook.CertificateRenewBefore = types.StringValue(defaultCertificateRenewal)
	if givenWebhook != nil {
		if v := givenWebhook.CertificateValidity; !v.IsNull() && !v.IsUnknown() {
			m.Webhook.CertificateValidity = v
		}
		if v := givenWebhook.CertificateRenewBefore; !v.IsNull() && !v.IsUnknown() {
			m.Webhook.CertificateRenewBefore = v
		}
	}
	// A kubeconfig file named in the import ID replaces the content read
	// from the Secret: the Secret is then compared with what the file
	// renders, like after any apply.
	for _, c := range []struct{ given, read *componentModel }{{componentOf(givenController), &m.Controller.componentModel}, {webhookComponentOf(givenWebhook), &m.Webhook.componentModel}} {
		if c.given != nil && c.given.KubeconfigPath.ValueString() != "" {
			c.read.KubeconfigPath, c.read.Context, c.read.Kubeconfig = c.given.KubeconfigPath, c.given.Context, types.StringNull()
		}
	}
	m.Webhook.URL = types.StringNull()
	if u := ctrlOpts.WebhookURL; u != (deploy.Config{Namespace: ns, Name: name}).EffectiveWebhookURL() {
		m.Webhook.URL = types.StringValue(u)
	}

	// The NetworkPolicies: the webhook's says what both admit.
	np, err := kube.NetworkingV1().NetworkPolicies(ns).Get(ctx, base.WebhookName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		np = nil
	case err != nil:
		return false, fmt.Errorf("reading NetworkPolicy %s/%s: %w", ns, base.WebhookName(), err)
	}
	m.NetworkPolicy = networkPolicyFrom(networkPolicyFromCluster(np)).object()

	// The TLS Secret: the generated one, or someone else's.
	m.Webhook.TLSSecretName = types.StringNull()
	m.Webhook.ExtraSANs = types.ListValueMust(types.StringType, nil)
	tlsSecret := ""
	for _, v := range hook.Spec.Template.Spec.Volumes {
		if v.Name == "tls" && v.Secret != nil {
			tlsSecret = v.Secret.SecretName
		}
	}
	cfg, diags := m.deployConfig(ctx)
	if diags.HasError() {
		return false, fmt.Errorf("the deployed configuration is not usable: %v", diags)
	}
	if tlsSecret != base.TLSSecretName() {
		m.Webhook.TLSSecretName = types.StringValue(tlsSecret)
		ca, notAfter, err := readTLSSecret(ctx, kube, ns, tlsSecret)
		if err != nil {
			return false, err
		}
		cfg.TLS.SecretName, cfg.TLS.CACert = tlsSecret, ca
		m.CABundle = types.StringValue(string(ca))
		m.CertificateNotAfter = types.StringValue(notAfter.Format(timeFormat))
	} else {
		tlsm, err := readGeneratedTLS(ctx, kube, cfg)
		if err != nil {
			return false, err
		}
		if tlsm == nil {
			return false, fmt.Errorf("the webhook TLS Secret %s/%s is gone; delete the runtime's Deployments and apply again, or recreate the Secret", ns, tlsSecret)
		}
		hosts, _ := certs.Hosts([]byte(tlsm.Cert))
		implied := m.servingHosts(ctx, cfg)
		var extra []attr.Value
		for _, h := range hosts {
			if !slices.Contains(implied, h) {
				extra = append(extra, types.StringValue(h))
			}
		}
		m.Webhook.ExtraSANs = types.ListValueMust(types.StringType, extra)
		notAfter, err := certs.NotAfter([]byte(tlsm.Cert))
		if err != nil {
			return false, err
		}
		cfg = withTLS(cfg, tlsm)
		m.CABundle = types.StringValue(tlsm.CABundle)
		m.CertificateNotAfter = types.StringValue(notAfter.UTC().Format(timeFormat))
	}
	m.WebhookURL = types.StringValue(cfg.EffectiveWebhookURL())
	objs, err := deploy.Render(cfg)
	if err != nil {
		return false, fmt.Errorf("the deployed configuration cannot be rendered: %w", err)
	}
	priv.Applied = nil
	for _, o := range objs {
		priv.Applied = append(priv.Applied, redact(o).Object)
	}
	return true, nil
}

const timeFormat = "2006-01-02T15:04:05Z07:00"

func componentOf(c *runtimeComponentModel) *componentModel {
	if c == nil {
		return nil
	}
	return &c.componentModel
}

func webhookComponentOf(w *webhookModel) *componentModel {
	if w == nil {
		return nil
	}
	return &w.componentModel
}

func onlyContainer(d *appsv1.Deployment) (*corev1.Container, error) {
	if len(d.Spec.Template.Spec.Containers) != 1 {
		return nil, fmt.Errorf("the Deployment %s/%s has %d containers; a depctrl runtime Deployment has one", d.Namespace, d.Name, len(d.Spec.Template.Spec.Containers))
	}
	return &d.Spec.Template.Spec.Containers[0], nil
}

func splitImage(ref string) (image, tag string) {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ref, "latest"
	}
	return ref[:i], ref[i+1:]
}

// runtimeArgs are the two binaries' arguments as the import reads them:
// the options the renderer wrote, and the user's extra arguments.
type runtimeArgs struct {
	controller                    controller.Options
	webhook                       webhook.Options
	controllerExtra, webhookExtra []string
}

// readRuntimeArgs reads the arguments of the two containers. The rendered
// ones come first (deploy.ControllerRenderedNames, WebhookRenderedNames),
// the user's extra ones after; each binary's own flag set reads them.
func readRuntimeArgs(ctrl, hook []string) (runtimeArgs, error) {
	var a runtimeArgs
	var rendered []string
	var err error
	rendered, a.controllerExtra = splitArgs(ctrl, deploy.ControllerRenderedNames()...)
	if a.controller, _, err = process.Parse[controller.Options](rendered); err != nil {
		return a, fmt.Errorf("controller: %w", err)
	}
	rendered, a.webhookExtra = splitArgs(hook, deploy.WebhookRenderedNames()...)
	// Settling is rendered either way since it became the default; a
	// deployment without the flag was rendered with settling off.
	if a.webhook, _, err = process.Parse(rendered, func(o *webhook.Options) { o.Settle = false }); err != nil {
		return a, fmt.Errorf("webhook: %w", err)
	}
	return a, nil
}

// splitArgs separates the flags the renderer sets (by name, among the
// leading arguments) from the extra arguments the user added after them.
func splitArgs(args []string, known ...string) (rendered, extra []string) {
	for i, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if i < len(known) && slices.Contains(known, name) {
			rendered = append(rendered, a)
			continue
		}
		extra = append(extra, a)
	}
	return rendered, extra
}

func componentFrom(d *appsv1.Deployment, c *corev1.Container, extra []string) *componentModel {
	replicas := int64(1)
	if d.Spec.Replicas != nil {
		replicas = int64(*d.Spec.Replicas)
	}
	q := func(list corev1.ResourceList, name corev1.ResourceName) types.String {
		if v, ok := list[name]; ok {
			return types.StringValue(v.String())
		}
		return types.StringNull()
	}
	args := make([]attr.Value, 0, len(extra))
	for _, a := range extra {
		args = append(args, types.StringValue(a))
	}
	return &componentModel{
		KubeconfigPath: types.StringNull(),
		Context:        types.StringNull(),
		Replicas:       types.Int64Value(replicas),
		ExtraArgs:      types.ListValueMust(types.StringType, args),
		CPURequest:     q(c.Resources.Requests, corev1.ResourceCPU),
		MemoryRequest:  q(c.Resources.Requests, corev1.ResourceMemory),
		CPULimit:       q(c.Resources.Limits, corev1.ResourceCPU),
		MemoryLimit:    q(c.Resources.Limits, corev1.ResourceMemory),
	}
}

// readGeneratedTLS reads back a certificate this resource generated: the
// webhook's TLS Secret and, when it still exists, the issuer Secret with
// the CA key. nil when there is no TLS Secret.
func readGeneratedTLS(ctx context.Context, kube kubernetes.Interface, cfg deploy.Config) (*tlsMaterial, error) {
	s, err := kube.CoreV1().Secrets(cfg.Namespace).Get(ctx, cfg.TLSSecretName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", cfg.Namespace, cfg.TLSSecretName(), err)
	}
	bundle := s.Data[deploy.CAKey]
	first, _ := pem.Decode(bundle)
	if first == nil || len(s.Data[deploy.TLSCertKey]) == 0 || len(s.Data[deploy.TLSKeyKey]) == 0 {
		// Unusable: treat it as absent, so the next apply issues anew.
		return nil, nil
	}
	m := &tlsMaterial{
		CABundle: string(bundle),
		CACert:   string(pem.EncodeToMemory(first)),
		Cert:     string(s.Data[deploy.TLSCertKey]),
		Key:      string(s.Data[deploy.TLSKeyKey]),
	}
	issuer, err := kube.CoreV1().Secrets(cfg.Namespace).Get(ctx, cfg.IssuerSecretName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("reading Secret %s/%s: %w", cfg.Namespace, cfg.IssuerSecretName(), err)
	case len(issuer.Data[deploy.TLSKeyKey]) > 0:
		m.CACert, m.CAKey = string(issuer.Data[deploy.TLSCertKey]), string(issuer.Data[deploy.TLSKeyKey])
	}
	return m, nil
}

// runtimeIdentity names a runtime by its namespace and name. The other
// attributes are runtimeImportAttributes, with "_" for ".": in an import
// block they say what an import ID adds as ,<attribute>=<value>; they are
// null in the stored identity.
type runtimeIdentity struct {
	Namespace                     types.String `tfsdk:"namespace"`
	Name                          types.String `tfsdk:"name"`
	WorkspacePath                 types.String `tfsdk:"workspace_path"`
	ControllerKubeconfigPath      types.String `tfsdk:"controller_kubeconfig_path"`
	ControllerContext             types.String `tfsdk:"controller_context"`
	WebhookKubeconfigPath         types.String `tfsdk:"webhook_kubeconfig_path"`
	WebhookContext                types.String `tfsdk:"webhook_context"`
	WebhookCertificateValidity    types.String `tfsdk:"webhook_certificate_validity"`
	WebhookCertificateRenewBefore types.String `tfsdk:"webhook_certificate_renew_before"`
}

func runtimeIdentityOf(ns, name types.String) runtimeIdentity {
	null := types.StringNull()
	return runtimeIdentity{Namespace: ns, Name: name, WorkspacePath: null, ControllerKubeconfigPath: null, ControllerContext: null,
		WebhookKubeconfigPath: null, WebhookContext: null, WebhookCertificateValidity: null, WebhookCertificateRenewBefore: null}
}

// settings are the import-only attributes of id that are set, keyed as in
// runtimeImportAttributes.
func (id runtimeIdentity) settings() map[string]string {
	out := map[string]string{}
	for attr, v := range map[string]types.String{
		"workspace_path":             id.WorkspacePath,
		"controller.kubeconfig_path": id.ControllerKubeconfigPath, "controller.context": id.ControllerContext,
		"webhook.kubeconfig_path": id.WebhookKubeconfigPath, "webhook.context": id.WebhookContext,
		"webhook.certificate_validity": id.WebhookCertificateValidity, "webhook.certificate_renew_before": id.WebhookCertificateRenewBefore,
	} {
		if v.ValueString() != "" {
			out[attr] = v.ValueString()
		}
	}
	return out
}

func (r *runtimeResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	attrs := map[string]identityschema.Attribute{
		"namespace": identityschema.StringAttribute{
			RequiredForImport: true,
			Description:       "The namespace the runtime runs in, such as `" + deploy.DefaultNamespace + "`.",
		},
		"name": identityschema.StringAttribute{
			OptionalForImport: true,
			Description:       "The prefix of the runtime's objects, `" + deploy.DefaultName + "` when not given.",
		},
	}
	for _, attr := range runtimeImportAttributes {
		attrs[strings.ReplaceAll(attr, ".", "_")] = identityschema.StringAttribute{
			OptionalForImport: true,
			Description: "Import only, always null in the stored identity: `" + attr + "` as the configuration sets it, " +
				"which the cluster does not record (as `," + attr + "=<value>` in an import ID).",
		}
	}
	resp.IdentitySchema = identityschema.Schema{Attributes: attrs}
}

// ImportState accepts <namespace>/<name>, or <namespace> for the default
// name, followed by what the cluster cannot tell: where the configuration
// takes the kubeconfigs from and the certificate policy, as
// ,<attribute>=<value> (runtimeImportAttributes); or the identity, which
// says the same in its attributes. Read then learns everything else from
// the cluster.
func (r *runtimeResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	var ns, name string
	settings := map[string]string{}
	what, given := "import ID", fmt.Sprintf("%q", req.ID)
	if byIdentity(req) {
		id, ok := getModel[runtimeIdentity](ctx, req.Identity, &resp.Diagnostics)
		if !ok {
			return
		}
		ns, name, settings = id.Namespace.ValueString(), id.Name.ValueString(), id.settings()
		if name == "" {
			name = deploy.DefaultName
		}
		what, given = "import identity", "the identity"
		if !dnsLabelRE.MatchString(ns) || !dnsLabelRE.MatchString(name) {
			resp.Diagnostics.AddError("Invalid import identity",
				fmt.Sprintf("namespace %q and name %q are not a namespace and a name such as %s and %s", ns, name, deploy.DefaultNamespace, deploy.DefaultName))
			return
		}
	} else {
		parts := strings.Split(req.ID, ",")
		var found bool
		ns, name, found = strings.Cut(parts[0], "/")
		if !found {
			name = deploy.DefaultName
		}
		if !dnsLabelRE.MatchString(ns) || !dnsLabelRE.MatchString(name) {
			resp.Diagnostics.AddError("Invalid import ID",
				fmt.Sprintf("%q is not <namespace>/<name> or <namespace>, such as %s/%s, followed by any of ,<attribute>=<value> for %s",
					req.ID, deploy.DefaultNamespace, deploy.DefaultName, strings.Join(runtimeImportAttributes, ", ")))
			return
		}
		for _, p := range parts[1:] {
			attr, value, ok := strings.Cut(p, "=")
			if _, seen := settings[attr]; !ok || value == "" || !slices.Contains(runtimeImportAttributes, attr) || seen {
				resp.Diagnostics.AddError("Invalid import ID",
					fmt.Sprintf("%q in %q is not <attribute>=<value>, once each, for one of %s", p, req.ID, strings.Join(runtimeImportAttributes, ", ")))
				return
			}
			settings[attr] = value
		}
	}
	for _, c := range []string{"controller", "webhook"} {
		if _, ok := settings[c+".kubeconfig_path"]; !ok {
			if _, ok := settings[c+".context"]; ok {
				resp.Diagnostics.AddError("Invalid "+what, fmt.Sprintf("%s.context in %s needs %s.kubeconfig_path", c, given, c))
				return
			}
		}
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), ns+"/"+name)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("namespace"), ns)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), name)...)
	for attr, value := range settings {
		at := path.Empty()
		for _, step := range strings.Split(attr, ".") {
			at = at.AtName(step)
		}
		resp.Diagnostics.Append(resp.State.SetAttribute(ctx, at, value)...)
	}
	setIdentity(ctx, resp.Identity, runtimeIdentityOf(types.StringValue(ns), types.StringValue(name)), &resp.Diagnostics)
}
