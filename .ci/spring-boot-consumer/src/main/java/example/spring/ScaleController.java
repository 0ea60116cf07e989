package example.spring;

import io.cudaloom.DeviceMemory;
import io.cudaloom.GpuDevice;
import io.cudaloom.GpuKernel;
import io.cudaloom.GpuStream;
import io.cudaloom.HostMemory;
import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.server.ResponseStatusException;

@RestController
public class ScaleController implements AutoCloseable {
    private final GpuDevice device;
    private final GpuStream stream;

    public ScaleController(GpuDevice device) {     // the auto-configured device (cudaloom.* properties)
        this.device = device;
        this.stream = device.newStream();          // shared by every request; closed before the device
    }

    public record Scaled(int n, float factor, double sum, boolean virtual, String device) {}

    /** GET /scale?n=1000&factor=3: scales 0, 1, ..., n-1 on the device and returns their sum. */
    @GetMapping("/scale")
    public Scaled scale(@RequestParam(defaultValue = "1000") int n, @RequestParam(defaultValue = "2") float factor)
            throws InterruptedException {
        if (n < 1 || n > 1 << 20) {
            throw new ResponseStatusException(HttpStatus.BAD_REQUEST, "n must be between 1 and 1048576, was " + n);
        }
        long bytes = 4L * n;
        try (DeviceMemory data = device.allocate(bytes); HostMemory host = device.allocateHost(bytes)) {
            for (int i = 0; i < n; i++) host.floats().put(i, i);
            stream.copy(host, data, bytes);
            stream.launch(GpuKernel.SCALE_F32, (n + 255) / 256, 256, data, factor, n);
            stream.copy(data, host, bytes);
            stream.event().await();                // parks this request's virtual thread until the GPU is done
            double sum = 0;
            for (int i = 0; i < n; i++) sum += host.floats().get(i);
            return new Scaled(n, factor, sum, Thread.currentThread().isVirtual(), device.name());
        }
    }

    @Override
    public void close() {                          // Spring calls it at shutdown
        stream.close();
    }
}
