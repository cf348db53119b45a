# syntax=docker/dockerfile:1
# Switchyard's image: a static binary on distroless, non-root, no shell.
# No container engine runs on the development machines; build it elsewhere (README: Deployment):
#   docker build -t switchyard:dev .        (or: podman build, buildah bud, kaniko, ...)
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
# Modules first, so that a source change reuses the download layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO_ENABLED=0: a static binary (the sqlite driver is pure Go), trimmed paths.
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w" -o /out/switchyard ./cmd/switchyard

# distroless static: CA certificates and tzdata, no shell, no package manager;
# the :nonroot tag runs as uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/switchyard /switchyard
USER 65532:65532
# REST (OpenAI-compatible, /health, /metrics) and gRPC. Bind all interfaces in a
# container (the defaults are loopback): the chart passes these flags.
EXPOSE 8080 9090
ENTRYPOINT ["/switchyard", "--http-addr", "0.0.0.0:8080", "--grpc-addr", "0.0.0.0:9090"]
