package deploy

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// hostnameLabel is the node label every kubelet sets to its node's name.
const hostnameLabel = "kubernetes.io/hostname"

// disruptionBudget keeps a voluntary disruption (a node drain, a cluster
// autoscaler scale-down) from evicting more than one pod of the component
// at a time, so that one replica always answers: the webhook configurations
// fail closed, and with no webhook pod kcp refuses every protected delete
// and every write of a dependent type.
//
// None is rendered for fewer than two replicas: a budget that may evict
// nothing would block every drain of the node the one pod runs on, and a
// single replica cannot be kept available through a drain anyway.
//
// Unhealthy pods may always be evicted (unhealthyPodEvictionPolicy
// AlwaysAllow): a pod that is not ready answers nothing, and must not hold
// a drain up while the healthy ones are protected.
func (c Config) disruptionBudget(component string, replicas int32) *policyv1.PodDisruptionBudget {
	if replicas < 2 {
		return nil
	}
	one := intstr.FromInt32(1)
	always := policyv1.AlwaysAllow
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: c.meta(c.Name+"-"+component, component),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable:             &one,
			Selector:                   &metav1.LabelSelector{MatchLabels: c.selector(component)},
			UnhealthyPodEvictionPolicy: &always,
		},
	}
}

// spread places a component's replicas on different nodes, so that one
// node's failure (which no disruption budget covers) takes at most one.
//
// The topology spread constraint is ScheduleAnyway, not DoNotSchedule: on a
// cluster with fewer schedulable nodes than replicas (one node, or nodes
// cordoned during a drain) DoNotSchedule would leave a replacement pod
// Pending, and a webhook pod that does not run is worse than two on one
// node, since the webhook fails closed. The preferred anti-affinity adds
// weight to the same preference for schedulers that score spreading
// lightly. matchLabelKeys counts only pods of the same ReplicaSet, so that
// during a rollout the old pods do not push the new ones together.
func (c Config) spread(component string) (*corev1.Affinity, []corev1.TopologySpreadConstraint) {
	selector := &metav1.LabelSelector{MatchLabels: c.selector(component)}
	affinity := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight:          100,
			PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: selector, TopologyKey: hostnameLabel},
		}},
	}}
	constraints := []corev1.TopologySpreadConstraint{{
		MaxSkew:           1,
		TopologyKey:       hostnameLabel,
		WhenUnsatisfiable: corev1.ScheduleAnyway,
		LabelSelector:     selector,
		MatchLabelKeys:    []string{"pod-template-hash"},
	}}
	return affinity, constraints
}
