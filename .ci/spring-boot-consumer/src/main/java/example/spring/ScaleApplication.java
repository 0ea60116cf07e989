package example.spring;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

@SpringBootApplication
public class ScaleApplication {
    public static void main(String[] args) {
        SpringApplication.run(ScaleApplication.class, args);
    }
}
