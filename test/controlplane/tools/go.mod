module edge-operator/test/controlplane/tools

go 1.25.0

tool (
	helm.sh/helm/v3/cmd/helm
	sigs.k8s.io/kustomize/kustomize/v5
)

require (
	helm.sh/helm/v3 v3.21.4
	sigs.k8s.io/kustomize/kustomize/v5 v5.8.3
)
