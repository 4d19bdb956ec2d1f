# Multi-stage build: a static binary on a distroless, non-root base.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/matchgate ./cmd/matchgate

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/matchgate /matchgate
USER nonroot:nonroot
EXPOSE 8080
# Listen on all interfaces inside the container; point it at real Redis and
# PostgreSQL for anything beyond a demo.
ENV MATCHGATE_ADDR=0.0.0.0:8080
ENTRYPOINT ["/matchgate"]
CMD ["serve"]
